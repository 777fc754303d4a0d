"""The LLM judge against a real ``openai`` client and a local chat-completions server: structured,
redacted evidence; answers validated; timeouts, errors, invalid answers, the hourly cap and a full
queue counted; the verdict neither waits for nor changes with the judge."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from otel_traj.judge.answer import InvalidAnswer, parse_answer
from otel_traj.judge.client import OpenAIChatModel
from otel_traj.judge.limits import sampled
from otel_traj.judge.result import JudgeResult
from otel_traj.judge.sink import JudgeSink
from otel_traj.policy import parse_policy
from otel_traj.serialize import verdict_to_dict
from tests.judge_helpers import RUBRIC, judge_policy, judge_sink, verdict
from tests.judge_server import answer, judge_server

JUDGE = "answer_addresses_request"


def calls(sink_stats: dict[tuple[str, str], int]) -> dict[str, int]:
    return {result: n for (judge, result), n in sink_stats.items() if judge == JUDGE}


def test_a_valid_answer_becomes_a_judge_result_and_the_verdict_stays_as_it_was() -> None:
    results: list[JudgeResult] = []
    graded = verdict()
    before = copy.deepcopy(verdict_to_dict(graded))
    with judge_server(reply=lambda r: answer(0.75, "pass", "Refund filed as asked.")) as server:
        sink = judge_sink(server, judge_policy(model="judge-mini"), results)
        sink.export(graded)
        assert sink.force_flush(10_000)
        sink.shutdown()
    [result] = results
    assert (result.judge, result.score, result.label, result.source) == (JUDGE, 0.75, "pass", "judge")
    assert (result.explanation, result.model, result.severity) == (
        "Refund filed as asked.",
        "judge-mini",
        "info",
    )
    assert result.trace_id == graded.trajectory.trace_id
    assert calls(sink.stats.judge_calls) == {"ok": 1}
    assert verdict_to_dict(graded) == before
    [request] = server.requests
    assert request["model"] == "judge-mini"
    assert request["response_format"] == {"type": "json_object"}


def test_the_judge_receives_structured_redacted_evidence_and_the_rubric() -> None:
    graded = verdict()
    first, *rest = graded.trajectory.tool_calls
    first = replace(first, arguments={"customer_id": "C023", "api_key": "sk-live-0123456789"})
    trajectory = replace(
        graded.trajectory, tool_calls=(first, *rest), user_input="Refund me, my email is jane.doe@example.com"
    )
    graded = replace(graded, trajectory=trajectory)
    with judge_server() as server:
        sink = judge_sink(server, judge_policy(labels=["pass", "partial", "fail"]), [])
        sink.export(graded)
        assert sink.force_flush(10_000)
        sink.shutdown()
    system, user = server.requests[0]["messages"]
    assert system["role"] == "system" and "JSON" in system["content"]
    question = json.loads(user["content"])
    assert (question["rubric"], question["labels"]) == (RUBRIC, ["pass", "partial", "fail"])
    evidence = question["evidence"]
    assert evidence["user_input"] == "Refund me, my email is [REDACTED]"
    assert evidence["final_answer"] == graded.trajectory.final_answer
    assert [c["tool"] for c in evidence["tool_calls"]] == [
        "get_subscription",
        "list_invoices",
        "create_refund_request",
    ]
    assert evidence["tool_calls"][0]["arguments"] == {"customer_id": "C023", "api_key": "[REDACTED]"}
    assert json.loads(evidence["tool_calls"][1]["result"])[0]["invoice_id"] == "INV-1001"
    assert evidence["tool_contracts"] == {
        "create_refund_request": {"side_effect": True, "grounded": ["invoice_id"]}
    }
    assert "sk-live-0123456789" not in user["content"]


@pytest.mark.parametrize(
    "reply",
    [
        "The run looks fine to me.",
        json.dumps({"score": 1.5, "label": "pass", "explanation": "x"}),
        json.dumps({"score": "0.8", "label": "pass", "explanation": "x"}),
        json.dumps({"score": 0.8, "label": "excellent", "explanation": "x"}),
        json.dumps({"score": 0.8, "label": "pass"}),
        "",
    ],
)
def test_an_invalid_answer_is_counted_and_publishes_nothing(reply: str) -> None:
    results: list[JudgeResult] = []
    with judge_server(reply=lambda r: reply) as server:
        sink = judge_sink(server, judge_policy(), results)
        sink.export(verdict())
        assert sink.force_flush(10_000)
        sink.shutdown()
    assert results == []
    assert calls(sink.stats.judge_calls) == {"invalid": 1}


def test_answer_validation_names_the_field() -> None:
    with pytest.raises(InvalidAnswer, match=r"score: Input should be less than or equal to 1"):
        parse_answer('{"score": 2, "label": "pass", "explanation": "x"}', ("pass", "fail"))
    with pytest.raises(InvalidAnswer, match=r"label: 'great' is not one of pass, fail"):
        parse_answer('{"score": 1, "label": "great", "explanation": "x"}', ("pass", "fail"))
    fenced = parse_answer(
        '```json\n{"score": 0, "label": "fail", "explanation": "No."}\n```', ("pass", "fail")
    )
    assert (fenced.score, fenced.label) == (0, "fail")


def test_a_slow_model_times_out_counted_while_verdicts_keep_flowing() -> None:
    results: list[JudgeResult] = []
    with judge_server(hold=True) as server:
        sink = judge_sink(server, judge_policy(timeout_s=0.2), results, max_queue=10)
        sink.export(verdict(1))
        assert server.received.acquire(timeout=10)
        # The judge thread is waiting on the model; export still returns at once and only queues.
        sink.export(verdict(2))
        assert sink.force_flush(10_000)
        sink.shutdown()
    assert results == []
    assert calls(sink.stats.judge_calls) == {"timeout": 2}


def test_an_endpoint_error_is_counted() -> None:
    with judge_server(status=500) as server:
        sink = judge_sink(server, judge_policy(), [])
        sink.export(verdict())
        assert sink.force_flush(10_000)
        sink.shutdown()
    assert calls(sink.stats.judge_calls) == {"error": 1}


def test_the_hourly_cap_is_counted_and_lifts_after_an_hour() -> None:
    now = [1000.0]
    results: list[JudgeResult] = []
    with judge_server() as server:
        sink = judge_sink(server, judge_policy(max_calls_per_hour=2), results, clock=lambda: now[0])
        for trace_id in range(1, 5):
            sink.export(verdict(trace_id))
        assert sink.force_flush(10_000)
        assert calls(sink.stats.judge_calls) == {"ok": 2, "capped": 2}
        now[0] += 3600
        sink.export(verdict(5))
        assert sink.force_flush(10_000)
        sink.shutdown()
    assert sorted(r.trace_id for r in results) == [1, 2, 5]
    assert len(server.requests) == 3


def test_a_full_queue_drops_new_runs_counted_and_shutdown_counts_what_is_left() -> None:
    with judge_server(hold=True) as server:
        sink = judge_sink(server, judge_policy(timeout_s=5), [], max_queue=2)
        sink.export(verdict(1))
        assert server.received.acquire(timeout=10)  # in flight, held by the model
        for trace_id in range(2, 6):
            sink.export(verdict(trace_id))
        assert calls(sink.stats.judge_calls) == {"queue_full": 2}
        sink.shutdown(timeout_millis=0)
        server.release.set()
        assert sink.force_flush(10_000)
    counted = calls(sink.stats.judge_calls)
    assert counted["queue_full"] == 2
    assert counted["shutdown"] == 2
    assert counted.get("ok", 0) == 1
    after = calls(sink.stats.judge_calls)
    sink.export(verdict(9))
    assert calls(sink.stats.judge_calls)["shutdown"] == after["shutdown"] + 1


def test_sampling_is_by_trace_id_stable_and_close_to_the_share() -> None:
    ids = range(1, 20_001)
    chosen = [t for t in ids if sampled(t, JUDGE, 0.05)]
    assert 850 <= len(chosen) <= 1150
    assert chosen == [t for t in ids if sampled(t, JUDGE, 0.05)]
    assert chosen != [t for t in ids if sampled(t, "another_judge", 0.05)]
    assert all(sampled(t, JUDGE, 1.0) for t in ids[:100])
    assert not any(sampled(t, JUDGE, 0.0) for t in ids[:100])


def test_unsampled_runs_never_reach_the_model() -> None:
    with judge_server() as server:
        sink = judge_sink(server, judge_policy(sample=0.0), [])
        sink.export(verdict())
        assert sink.force_flush(10_000)
        sink.shutdown()
    assert server.requests == []
    assert sink.stats.judge_calls == {}


def test_has_judges_and_a_sink_judging_with_the_policy_in_force() -> None:
    first, second = judge_policy(), judge_policy(name="second_judge")
    without = parse_policy({"defaults": {"budget": {"max_tool_calls": 8}}})
    agent_only = parse_policy({"agents": {"support_agent": {"judges": [{"name": "j", "rubric": RUBRIC}]}}})
    assert first.has_judges() and agent_only.has_judges() and not without.has_judges()
    in_force = [first]
    results: list[JudgeResult] = []
    with judge_server(hold=True) as llm:
        model = OpenAIChatModel(base_url=llm.base_url, api_key="test-key")
        sink = JudgeSink(policy=lambda: in_force[0], on_result=[results.append], model=model)
        sink.export(verdict(0x1, first))
        assert llm.received.acquire(timeout=10)
        sink.export(verdict(0x2, first))  # waits behind the call in flight, with the judge it met
        in_force[0] = second
        sink.export(verdict(0x3, second))
        in_force[0] = without
        sink.export(verdict(0x4, without))
        llm.release.set()
        assert sink.force_flush(10_000)
        sink.shutdown()
    judged = sorted((r.trace_id, r.judge) for r in results)
    assert judged == [(0x1, JUDGE), (0x2, JUDGE), (0x3, "second_judge")]
