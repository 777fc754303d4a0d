"""A recorded run that reads a knowledge base (tests/fixtures/real/retrieval): LlamaIndex's retriever
under OpenInference, then a `FunctionAgent` whose refund names the invoice only the retrieved billing
record holds. The retriever span is read as the run's one context read, its documents kept; how the
run is graded is in tests/test_context_recordings.py."""

from __future__ import annotations

import json

from tests.context_recordings import RETRIEVAL, SCENARIOS, recorded_facts, recorded_run


def test_the_retriever_span_is_the_runs_one_read() -> None:
    for scenario in SCENARIOS:
        traj = recorded_run(RETRIEVAL, scenario)
        [read] = traj.context_reads
        assert (read.operation, read.name, read.dialect) == (
            "retrieval",
            "retrieval:retrieval",
            "openinference",
        )
        assert read.query == traj.user_input
        documents = json.loads(read.text or "")
        assert [d["id"] for d in documents] == ["kb-billing-c023", "kb-refund-policy"]
        assert all(isinstance(d["score"], float) and d["content"] for d in documents)
        # The retrieval is context, no tool call: the calls are the ones the tools ran.
        calls = [{"name": c.name, "arguments": c.arguments, "ok": c.ok} for c in traj.tool_calls]
        assert calls == recorded_facts(RETRIEVAL, scenario)["tool_calls"]
        assert traj.memory_writes == ()
