"""Real OpenInference and OpenLLMetry (Traceloop) runs as the Collector's GenAI normalizer passes them
on (tests/genai_normalizer.py): the trajectory read from the normalized spans against the one read
from the recorded spans, with the normalizer's originals kept (its default) and removed.

What differs is declared per framework, each with the Go mapping that causes it; every other part of
the trajectory (tool calls with names, arguments, results and call ids; model calls with tokens and
requested calls; agent runs; the documents retrievals returned; the user's message and the answer)
must read the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.offline import trajectories_from_views
from otel_traj.trajectory import Trajectory
from tests.genai_normalizer import normalize_otlp
from tests.real_frameworks import recorded_traces, run_files

REAL = Path(__file__).parent / "fixtures" / "real"
PROFILES = {"openinference": "openinference", "traceloop": "openllmetry"}
RUNS = sorted(
    (str(path.parent.relative_to(REAL)), path.name.removesuffix(".otlp.json"))
    for path in recorded_traces("otlp.json")
    if any(source in path.parent.name for source in PROFILES)
)

# `messages.go` rebuilds `gen_ai.input.messages` / `gen_ai.output.messages` from the flattened
# `llm.*_messages.N.message.*` attributes when the span has none; otel-traj reads those before
# `input.value` / `output.value`, and joins what the rebuilt messages lost: a rebuilt message without
# text gives way to the next source (Google ADK's user message, flattened where applyField does not
# read it), DSPy's ChatAdapter sections are read from whichever source the request came from, and
# calls rebuilt without ids (Haystack's) take them from `output.value`. With the originals kept,
# nothing differs.
CHANGED_KEPT: dict[str, frozenset[str]] = {}
# `remove_originals` also drops every source attribute it renamed and every flattened message
# attribute (read or not: `name`, `contents.*`). What then differs:
CHANGED_REMOVED: dict[str, frozenset[str]] = {
    # `valuemappings.go`: `chain` -> `invoke_agent`. CHAIN spans (the framework's internal steps)
    # become agent runs without `gen_ai.agent.name`, and `agent.name` is gone from the agent span.
    "beeai_openinference": frozenset({"agent_runs"}),
    "crewai_openinference": frozenset({"agent_runs"}),
    "google_adk_openinference": frozenset({"agent_runs"}),
    "haystack_openinference": frozenset({"agent_runs"}),
    "llamaindex_openinference": frozenset({"agent_runs"}),
    # `retriever` -> `retrieval` with the kind removed: LlamaIndex's inner `_aretrieve` RETRIEVER span
    # (the query object and the documents' reprs in `input.value` / `output.value`) reads as a
    # retrieval too, nested in the outer one: the same retrieval, read once with the outer one's
    # documents (`otel_traj/context_reads.py`), so the context reads are the same.
    "retrieval/llamaindex_openinference": frozenset({"agent_runs"}),
    "langgraph_openinference": frozenset({"agent", "agent_runs"}),
    "smolagents_openinference": frozenset({"agent", "agent_runs"}),
    # DSPy: with `openinference.span.kind` renamed away (TOOL -> `execute_tool`, CHAIN ->
    # `invoke_agent`) its tool spans lose their results and failures, its `finish` step reads as a
    # tool, and its modules as unnamed agent runs.
    "dspy_openinference": frozenset({"tools", "agent_runs"}),
    # `traceloop.span.kind` `task` -> `invoke_agent` with `traceloop.entity.name` as the agent's name:
    # every task becomes an agent run; `traceloop.entity.output` (a Python repr of the tool's result,
    # its error flag in `traceloop.entity.*`) moves to `gen_ai.output.messages`.
    "llamaindex_traceloop": frozenset({"agent", "tools", "agent_runs"}),
}


def _read(path: Path) -> Trajectory:
    [trajectory] = trajectories_from_views(read_trace_inputs([path]).views)
    return trajectory


def _summary(traj: Trajectory) -> dict[str, Any]:
    return {
        "agent": traj.agent,
        "conversation_id": traj.conversation_id,
        "user_input": traj.user_input,
        "final_answer": traj.final_answer,
        "tools": [
            (c.name, c.arguments, c.arguments_text, c.result, c.call_id, c.ok) for c in traj.tool_calls
        ],
        "models": [
            (m.model, m.input_tokens, m.output_tokens, [(r.name, r.call_id) for r in m.requested_tools])
            for m in traj.model_calls
        ],
        "agent_runs": [(a.agent_name, a.workflow) for a in traj.agent_runs],
        "context_reads": [(r.operation, r.query, r.text) for r in traj.context_reads],
        "tokens": traj.tokens,
    }


@pytest.mark.parametrize("remove_originals", [False, True], ids=["kept", "removed"])
@pytest.mark.parametrize(("framework", "scenario"), RUNS, ids=[f"{f}/{s}" for f, s in RUNS])
def test_normalized_spans_read_the_same(
    framework: str, scenario: str, remove_originals: bool, tmp_path: Path
) -> None:
    [recorded] = run_files(framework, scenario, "otlp.json")
    [profile] = [p for source, p in PROFILES.items() if source in framework]
    document = normalize_otlp(json.loads(recorded.read_text()), profile, remove_originals=remove_originals)
    normalized = tmp_path / recorded.name
    normalized.write_text(json.dumps(document))
    before, after = _summary(_read(recorded)), _summary(_read(normalized))
    changed = (CHANGED_REMOVED if remove_originals else CHANGED_KEPT).get(framework, frozenset())
    assert {k for k in before if before[k] != after[k]} == changed
    # Token usage is never lost: `llm.token_count.*` become `gen_ai.usage.*`.
    assert before["tokens"] == after["tokens"]
