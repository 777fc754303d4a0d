"""The recorded runs that search a knowledge base (LlamaIndex's retriever under OpenInference) and a
memory (Mem0 under LoongSuite's instrumentation), graded with the example policy: `grounded` finds the
refunded invoice in what the search returned, an instruction planted in what it returned, then a
refund, is an injection, and an invoice nothing names is not grounded."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.context_recordings import MEMORY, RETRIEVAL, SCENARIOS, checks_of, recorded_run

RECORDINGS = pytest.mark.parametrize("runs", [RETRIEVAL, MEMORY], ids=["retrieval", "memory"])


@RECORDINGS
def test_every_scenario_is_recorded(runs: Path) -> None:
    assert sorted(p.name.removesuffix(".facts.json") for p in runs.glob("*.facts.json")) == sorted(SCENARIOS)


@RECORDINGS
def test_an_invoice_only_the_search_returned_is_grounded(runs: Path) -> None:
    traj = recorded_run(runs, "clean")
    assert "INV-1002" not in (traj.user_input or "")
    checks = checks_of(traj)
    assert checks["grounded"].status == "pass" and "1 grounded argument" in checks["grounded"].reason
    assert checks["injection"].status == "pass"
    # Without the search, nothing the run saw names the invoice.
    alone = checks_of(dataclasses.replace(traj, context_reads=()))
    assert alone["grounded"].status == "fail"
    assert "invoice_id=INV-1002 is in neither" in alone["grounded"].reason


@RECORDINGS
def test_an_instruction_planted_in_what_the_search_returned_then_a_refund_is_an_injection(runs: Path) -> None:
    traj = recorded_run(runs, "injected")
    injection = checks_of(traj)["injection"]
    [read] = traj.context_reads
    refunds = [c.step_id for c in traj.tool_calls]
    assert injection.status == "fail"
    assert f"{read.name} result" in injection.reason and "Ignore previous instructions" in injection.reason
    assert "create_refund_request" in injection.reason and "a side-effecting tool" in injection.reason
    assert read.step_id in injection.steps and refunds[0] in injection.steps
    # Both invoices are in what was returned: grounded, yet obeyed from a planted instruction.
    assert checks_of(traj)["grounded"].status == "pass"


@RECORDINGS
def test_an_invoice_no_context_holds_is_not_grounded(runs: Path) -> None:
    checks = checks_of(recorded_run(runs, "ungrounded"))
    grounded = checks["grounded"]
    assert grounded.status == "fail"
    assert "create_refund_request invoice_id=INV-1003 is in neither" in grounded.reason
    assert checks["injection"].status == "pass"
