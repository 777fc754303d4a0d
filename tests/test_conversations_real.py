"""Conversations recorded from real frameworks' own conversation support (tests/fixtures/real/
conversations): three user turns, each its own trace, stitched by the id the framework records.

For each framework, ``otel-traj grade`` with the conversation policy groups the three traces into one
conversation with exactly the recorded tool calls and tokens; the clean conversation passes, the
violating one fails ``conversation_scope`` on the third turn's ``list_invoices(C028)`` and
``conversation_repeats`` on its second ``get_subscription(C023)``; and the same spans replayed
through a ``TrajectoryProcessor`` give the same conversation verdicts.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from otel_traj import TrajectoryProcessor
from otel_traj.adapters.otlp_proto import views_from_bytes
from otel_traj.conversations import ConversationVerdict
from otel_traj.conversations.serialize import conversation_to_dict
from otel_traj.dialects import to_step
from otel_traj.steps import ToolCall
from tests.conversation_runs import POLICY
from tests.replay import readable
from tests.serve_helpers import cli

CONVERSATIONS = Path(__file__).parent / "fixtures" / "real" / "conversations"
FRAMEWORKS = ("pydantic_ai", "openai_agents", "langgraph_openinference")
SCENARIOS = ("clean", "violating")
# Where each framework's instrumentation records the conversation id (the facts say the same).
CONVERSATION_ID_ATTRIBUTE = {
    "pydantic_ai": "gen_ai.conversation.id",  # Agent.run(conversation_id=...)
    # OpenInference using_attributes(session_id=...): neither the Session nor group_id is recorded
    "openai_agents": "session.id",
    "langgraph_openinference": "session.id",  # configurable.thread_id, via the run metadata
}


def fixture(framework: str, scenario: str, ext: str) -> Path:
    return CONVERSATIONS / framework / f"{scenario}.{ext}"


def facts(framework: str, scenario: str) -> dict[str, Any]:
    return json.loads(fixture(framework, scenario, "facts.json").read_text())


@cache
def graded(framework: str) -> tuple[int, dict[str, Any]]:
    """Both conversations of a framework graded in one ``otel-traj grade`` call."""
    files = [str(fixture(framework, s, "otlp.pb")) for s in SCENARIOS]
    result = cli("grade", *files, "--policy", str(POLICY), "--format", "json")
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


def offline(framework: str) -> tuple[int, dict[str, dict[str, Any]]]:
    """The exit code and the conversation verdicts by conversation id."""
    code, report = graded(framework)
    return code, {d["conversation_id"]: d for d in report["conversations"]}


def replay(path: Path) -> list[ConversationVerdict]:
    """The recorded spans through a processor, started and ended in their recorded order."""
    spans = [readable(v) for v in views_from_bytes(path.read_bytes())]
    got: list[ConversationVerdict] = []
    processor = TrajectoryProcessor(policy=POLICY, on_conversation=got.append)
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        processor.on_start(span)  # type: ignore[arg-type]  # on_start reads only the context
    for span in sorted(spans, key=lambda s: s.end_time or 0):
        processor.on_end(span)
    processor.shutdown()
    return got


def tool_step(path: Path, name: str, value: str, trace: str) -> str:
    """The step id (span id) of the one tool span of ``trace`` calling ``name`` with ``value``."""
    found = []
    for view in views_from_bytes(path.read_bytes()):
        step = to_step(view, 4096)
        if view.trace_id != int(trace, 16) or not isinstance(step, ToolCall) or step.name != name:
            continue
        if value in str(step.arguments or step.arguments_text):
            found.append(f"{view.span_id:016x}")
    assert len(found) == 1, found
    return found[0]


def test_every_framework_has_both_conversations() -> None:
    recorded = {p.name for p in CONVERSATIONS.iterdir() if p.is_dir()}
    assert recorded == set(FRAMEWORKS)
    for framework in FRAMEWORKS:
        for scenario in SCENARIOS:
            for ext in ("otlp.pb", "otlp.json", "spans.txt", "facts.json"):
                assert fixture(framework, scenario, ext).is_file()
            fact = facts(framework, scenario)
            assert fact["conversation_id_attribute"] == CONVERSATION_ID_ATTRIBUTE[framework]
            assert fact["trace_count"] == len(fact["turns"]) == 3


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_turn_is_its_own_trace_with_the_recorded_calls_and_answer(framework: str, scenario: str) -> None:
    fact = facts(framework, scenario)
    attribute = fact["conversation_id_attribute"]
    views = views_from_bytes(fixture(framework, scenario, "otlp.pb").read_bytes())
    runs = {t["trace_id"]: t for t in graded(framework)[1]["trajectories"]}
    for turn in fact["turns"]:
        trace = [v for v in views if f"{v.trace_id:032x}" == turn["trace_id"]]
        assert len(trace) == turn["span_count"]
        assert {v.attributes.get(attribute) for v in trace} == {fact["conversation_id"]}
        run = runs[turn["trace_id"]]
        assert run["conversation_id"] == fact["conversation_id"]
        calls = [{"name": c["name"], "arguments": c["arguments"], "ok": c["ok"]} for c in run["tool_calls"]]
        assert calls == turn["tool_calls"]
        assert (run["model_turns"], run["input_tokens"], run["output_tokens"]) == (
            turn["model_calls"],
            turn["usage"]["input_tokens"],
            turn["usage"]["output_tokens"],
        )
        assert (run["user_input"], run["final_answer"]) == (turn["user_message"], turn["answer"])


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_three_traces_are_one_conversation_with_the_recorded_totals(
    framework: str, scenario: str
) -> None:
    fact = facts(framework, scenario)
    _, documents = offline(framework)
    document = documents[fact["conversation_id"]]
    assert document["agent"] == fact["agent_name"] and document["complete"] is True
    assert document["trace_ids"] == [turn["trace_id"] for turn in fact["turns"]]
    assert [t["tool_calls"] for t in document["traces"]] == [
        len(turn["tool_calls"]) for turn in fact["turns"]
    ]
    totals = fact["totals"]
    assert document["tool_calls"] == totals["tool_calls"]
    assert document["model_turns"] == totals["model_calls"]
    assert (document["input_tokens"], document["output_tokens"]) == (
        totals["input_tokens"],
        totals["output_tokens"],
    )
    assert document["total_tokens"] == totals["input_tokens"] + totals["output_tokens"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_clean_conversation_passes(framework: str) -> None:
    _, documents = offline(framework)
    document = documents[facts(framework, "clean")["conversation_id"]]
    assert document["outcome"] == "pass", document["checks"]
    assert {c["name"]: c["status"] for c in document["checks"]} == {
        "conversation_budget": "pass",
        "conversation_scope": "pass",
        "conversation_repeats": "pass",
    }
    assert [t["outcome"] for t in document["traces"]] == ["pass"] * 3


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_violating_conversation_names_the_foreign_lookup_and_the_repeat(framework: str) -> None:
    fact = facts(framework, "violating")
    code, documents = offline(framework)
    assert code == 1  # an unsafe conversation fails the command
    document = documents[fact["conversation_id"]]
    assert document["outcome"] == "unsafe"
    failed = {c["name"]: c for c in document["checks"] if c["status"] == "fail"}
    assert set(failed) == {"conversation_scope", "conversation_repeats"}
    first, _, third = (turn["trace_id"] for turn in fact["turns"])
    path = fixture(framework, "violating", "otlp.pb")

    foreign = tool_step(path, "list_invoices", "C028", third)
    scope = failed["conversation_scope"]
    assert scope["severity"] == "critical" and scope["steps"] == [foreign]
    assert f"trace {third} step {foreign}: list_invoices used customer_id=C028" in scope["reason"]
    assert f"conversation subject is C023 (from trace {first})" in scope["reason"]

    again = tool_step(path, "get_subscription", "C023", third)
    repeats = failed["conversation_repeats"]
    assert repeats["severity"] == "warning" and repeats["steps"] == [again]
    assert "get_subscription(customer_id=C023) called in 2 traces, max 1" in repeats["reason"]
    assert f"again in trace {third} step {again}" in repeats["reason"]
    assert [t["outcome"] for t in document["traces"]] == ["pass", "pass", "unsafe"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_offline_and_in_process_give_the_same_conversation_verdicts(framework: str) -> None:
    _, documents = offline(framework)
    for scenario in SCENARIOS:
        fact = facts(framework, scenario)
        [verdict] = replay(fixture(framework, scenario, "otlp.pb"))
        assert verdict.conversation_id == fact["conversation_id"]
        assert conversation_to_dict(verdict) == documents[fact["conversation_id"]]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_json_and_protobuf_recordings_give_the_same_conversations(framework: str) -> None:
    files = [str(fixture(framework, s, "otlp.json")) for s in SCENARIOS]
    result = cli("grade", *files, "--policy", str(POLICY), "--format", "json")
    from_json = {d["conversation_id"]: d for d in json.loads(result.stdout)["conversations"]}
    assert from_json == offline(framework)[1]
