"""A recorded run that reads and writes a memory store (tests/fixtures/real/memory): Mem0 under
LoongSuite's instrumentation, which records its methods as ``memory_operation`` spans, the method in
``gen_ai.memory.operation``. The search is read as the run's one context read and the memory written
after the answer as the side effect ``memory:create_memory``, which a policy can deny; how the run is
graded otherwise is in tests/test_context_recordings.py."""

from __future__ import annotations

import yaml

from otel_traj.grader import Grader
from otel_traj.policy import parse_policy
from tests.context_recordings import MEMORY, SCENARIOS, checks_of, recorded_facts, recorded_run
from tests.support_trajectories import EXAMPLE_POLICY


def test_the_memory_search_is_the_runs_one_read_and_the_add_its_one_write() -> None:
    for scenario in SCENARIOS:
        traj = recorded_run(MEMORY, scenario)
        [read] = traj.context_reads
        assert (read.operation, read.name, read.dialect) == (
            "search_memory",
            "memory:search_memory",
            "semconv",
        )
        assert read.query == traj.user_input
        # What Mem0 returned, as the instrumentation records it: a repr of the customer's records.
        assert (read.text or "").startswith("{'results': [{'id': ")
        assert "'memory': 'Invoice INV-1002 of 199 yuan was charged twice" in (read.text or "")
        assert "INV-2001 of 99 yuan was paid once" not in (read.text or "")
        [write] = traj.memory_writes
        assert (write.operation, write.name, write.query) == ("create_memory", "memory:create_memory", None)
        assert f"'memory': {recorded_facts(MEMORY, scenario)['final_answer']!r}" in (write.text or "")
        assert read.end_ns <= traj.tool_calls[0].start_ns and write.start_ns >= traj.tool_calls[-1].end_ns
        # Memory operations are context, no tool calls: the calls are the ones the tools ran.
        calls = [{"name": c.name, "arguments": c.arguments, "ok": c.ok} for c in traj.tool_calls]
        assert calls == recorded_facts(MEMORY, scenario)["tool_calls"]


def test_a_policy_that_denies_creating_memories_fails_the_add() -> None:
    assert checks_of(recorded_run(MEMORY, "clean"))["tools"].status == "pass"
    data = yaml.safe_load(EXAMPLE_POLICY.read_text())
    data["defaults"]["tools"]["deny"] = ["delete_account", "memory:create_memory"]
    checks = checks_of(recorded_run(MEMORY, "clean"), Grader(parse_policy(data)))
    tools = checks["tools"]
    assert tools.status == "fail"
    assert "memory:create_memory" in tools.reason
    assert tools.steps == (recorded_run(MEMORY, "clean").memory_writes[0].step_id,)
