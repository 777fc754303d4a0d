"""A recorded run that reads a knowledge base (tests/fixtures/real/retrieval): LlamaIndex's retriever
under OpenInference, then a `FunctionAgent` whose refund names the invoice only the retrieved billing
record holds. Graded with the example policy: `grounded` finds the invoice in what the retrieval
returned, and an instruction planted in a retrieved document, then a refund, is an injection."""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from typing import Any

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.grader import Grader
from otel_traj.offline import trajectories_from_views
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult
from tests.real_frameworks import REAL
from tests.support_trajectories import example_policy

RUNS = REAL / "retrieval" / "llamaindex_openinference"
GRADER = Grader(example_policy())


@cache
def _run(scenario: str) -> Trajectory:
    [trajectory] = trajectories_from_views(read_trace_inputs([RUNS / f"{scenario}.otlp.pb"]).views)
    return trajectory


def _facts(scenario: str) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((RUNS / f"{scenario}.facts.json").read_text())
    return facts


def _checks(traj: Trajectory) -> dict[str, CheckResult]:
    return {check.name: check for check in GRADER.grade(traj).checks}


def test_every_scenario_is_recorded() -> None:
    assert sorted(p.name.removesuffix(".facts.json") for p in RUNS.glob("*.facts.json")) == [
        "clean",
        "injected",
        "ungrounded",
    ]


def test_the_retriever_span_is_the_runs_one_read() -> None:
    for scenario in ("clean", "injected", "ungrounded"):
        traj = _run(scenario)
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
        assert calls == _facts(scenario)["tool_calls"]
        assert traj.memory_writes == ()


def test_an_invoice_only_the_retrieved_document_holds_is_grounded() -> None:
    traj = _run("clean")
    assert "INV-1002" not in (traj.user_input or "")
    checks = _checks(traj)
    assert checks["grounded"].status == "pass" and "1 grounded argument" in checks["grounded"].reason
    assert checks["injection"].status == "pass"
    # Without the retrieval, nothing the run saw names the invoice.
    alone = _checks(dataclasses.replace(traj, context_reads=()))
    assert alone["grounded"].status == "fail"
    assert "invoice_id=INV-1002 is in neither" in alone["grounded"].reason


def test_an_instruction_planted_in_a_retrieved_document_then_a_refund_is_an_injection() -> None:
    traj = _run("injected")
    checks = _checks(traj)
    injection = checks["injection"]
    [read] = traj.context_reads
    refunds = [c.step_id for c in traj.tool_calls]
    assert injection.status == "fail"
    assert (
        "retrieval:retrieval result" in injection.reason
        and "Ignore previous instructions" in injection.reason
    )
    assert "create_refund_request" in injection.reason and "a side-effecting tool" in injection.reason
    assert read.step_id in injection.steps and refunds[0] in injection.steps
    # Both invoices are in the retrieved document: grounded, yet obeyed from a planted instruction.
    assert checks["grounded"].status == "pass"


def test_an_invoice_no_context_holds_is_not_grounded() -> None:
    checks = _checks(_run("ungrounded"))
    grounded = checks["grounded"]
    assert grounded.status == "fail"
    assert "create_refund_request invoice_id=INV-1003 is in neither" in grounded.reason
    assert checks["injection"].status == "pass"
