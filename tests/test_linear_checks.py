"""``confirmation``, ``relations`` and ``efficiency``, and building a trajectory, stay linear in the
size of a trajectory.

Work is counted, not timed (see ``test_hostile_checks.py``): the searches of a user message, the
comparisons with an approval call, the JMESPath evaluations and the text comparisons must grow with
the number of steps, not with its square.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from otel_traj import builder
from otel_traj.checks import check_confirmation, confirmation
from otel_traj.checks import efficiency as efficiency_check
from otel_traj.checks import relations as relations_check
from otel_traj.checks.base import contains_token
from otel_traj.policy import Tools
from otel_traj.policy.models import ToolContract
from otel_traj.policy.rules import Confirmation, Efficiency, Relation
from otel_traj.records import TraceContext
from otel_traj.steps import ModelCall, ToolCall
from otel_traj.trajectory import Trajectory

SIZES = (10, 100, 1000)
SECOND = 1_000_000_000


def _linear(counts: dict[int, int], per_step: int) -> None:
    for steps in SIZES:
        assert counts[steps] <= per_step * steps, counts
    assert counts[1000] <= 12 * max(counts[100], 1), counts


class _Pattern:
    """A user pattern that counts the messages it is searched in."""

    def __init__(self, pattern: str) -> None:
        self.compiled = re.compile(pattern)
        self.pattern = pattern
        self.searched = 0

    def search(self, text: str) -> re.Match[str] | None:
        self.searched += 1
        return self.compiled.search(text)


def _refunds(steps: int) -> Trajectory:
    """Each turn the user says something new, the agent asks, and a refund follows unconfirmed; the
    approvals all finish after the last refund."""
    models = [
        ModelCall(
            span_id=10_000 + k,
            start_ns=SECOND + k * SECOND,
            end_ns=SECOND + k * SECOND + 10,
            input_source=f"message {k}",
            output_text=f"Shall I refund INV-{k}?",
        )
        for k in range(steps)
    ]
    refunds = [
        ToolCall(
            name="create_refund_request",
            span_id=k + 1,
            start_ns=SECOND + k * SECOND + 20,
            end_ns=SECOND + k * SECOND + 30,
            arguments={"invoice_id": f"INV-{k}"},
            turn=k if k % 2 else None,
        )
        for k in range(steps)
    ]
    approvals = [
        ToolCall(name="request_approval", span_id=20_000 + k, start_ns=1, end_ns=10**15) for k in range(steps)
    ]
    return Trajectory(
        trace_id=1, tool_calls=[*approvals, *refunds], model_calls=models, user_input="message 0"
    )


def test_confirmation_searches_each_message_once_and_looks_approvals_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compared = [0]
    inner = confirmation.finished_before  # type: ignore[attr-defined]

    def counting(a: ToolCall, b: ToolCall) -> bool:
        compared[0] += 1
        return inner(a, b)

    monkeypatch.setattr(confirmation, "finished_before", counting)
    searches, comparisons = {}, {}
    for steps in SIZES:
        pattern = _Pattern(r"(?i)\byes\b")
        rule = Confirmation.model_construct(
            tools=("create_refund_request",), user_pattern=pattern, approval_tools=("request_approval",)
        )
        compared[0] = 0
        result = check_confirmation(_refunds(steps), rule)  # type: ignore[arg-type]
        assert result.status == "fail" and len(result.steps) == steps
        searches[steps], comparisons[steps] = pattern.searched, compared[0]
        asked = confirmation.questions_before(_refunds(steps))
        # Each refund comes after the question of its own turn.
        assert all(asked(call) for call in _refunds(steps).tool_calls[steps:])
    _linear(searches, 2)
    _linear(comparisons, 2)


def _invoices_and_refunds(steps: int) -> Trajectory:
    """Lookups, each followed by a refund of the invoice it returned; every tenth step refunds an
    invoice no lookup returned."""
    calls = []
    for k in range(steps):
        start = SECOND + k * SECOND
        if k % 2:
            invoice = f"INV-{k - 1}" if k % 10 != 9 else f"INV-MADE-UP-{k}"
            name, arguments, result = "create_refund", {"invoice_id": invoice, "amount": 5}, "{}"
        else:
            invoice = f"INV-{k}"
            name, arguments = "get_invoice", {"invoice_id": invoice}
            result = f'{{"invoices": [{{"id": "{invoice}", "amount": 10}}]}}'
        calls.append(
            ToolCall(
                name=name,
                span_id=k + 1,
                start_ns=start,
                end_ns=start + 10,
                arguments=arguments,
                result=result,
            )
        )
    return Trajectory(trace_id=1, tool_calls=calls)


def test_relations_evaluates_a_bounded_number_of_earlier_results_per_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    evaluated = [0]
    inner = relations_check.select  # type: ignore[attr-defined]

    def counting(*args: Any) -> Any:
        evaluated[0] += 1
        return inner(*args)

    monkeypatch.setattr(relations_check, "select", counting)
    # A smaller window than the default, reached well before 1,000 steps.
    monkeypatch.setattr(relations_check, "MAX_EARLIER", 10)
    rule = Relation.model_validate(
        {
            "argument": "amount",
            "op": "<=",
            "earlier": "get_invoice",
            "path": "invoices[?id=='{invoice_id}'].amount | [0]",
        }
    )
    tools = Tools(contracts={"create_refund": ToolContract(relations=(rule,))})
    counts = {}
    for steps in SIZES:
        evaluated[0] = 0
        result = relations_check.check_relations(_invoices_and_refunds(steps), tools)
        counts[steps] = evaluated[0]
        made_up = [k for k in range(steps) if k % 10 == 9]
        # A made-up invoice fails while every earlier lookup is read back, is not judged past them.
        failed = [k for k in made_up if k // 2 + 1 <= relations_check.MAX_EARLIER]
        assert len(result.steps) == len(failed)
        assert result.status == ("fail" if failed else "pass")
    _linear(counts, 2)


def _lookups(steps: int) -> Trajectory:
    """Turn 0 runs ``steps`` lookups; turn 1 runs ``steps`` more whose arguments (one word and
    several) appear in none of the first turn's results: every comparison is a miss."""
    models = [
        ModelCall(span_id=1, start_ns=0, end_ns=10, input_source="find them"),
        ModelCall(span_id=2, start_ns=SECOND, end_ns=SECOND + 10, input_source="find them"),
    ]
    first = [
        ToolCall(
            name="lookup",
            span_id=100 + k,
            start_ns=20,
            end_ns=30,
            turn=0,
            arguments={"id": f"A-{k}"},
            result=f"record A-{k} holds value {k} and note alpha-{k}",
        )
        for k in range(steps)
    ]
    second = [
        ToolCall(
            name="lookup",
            span_id=10_000 + k,
            start_ns=SECOND + 20,
            end_ns=SECOND + 30,
            turn=1,
            arguments={"id": f"B-{k}", "note": f"beta-{k} extra words"},
        )
        for k in range(steps)
    ]
    return Trajectory(trace_id=1, model_calls=models, tool_calls=[*first, *second])


def test_efficiency_compares_each_argument_with_a_bounded_number_of_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    comparisons = 0

    def counting(haystack: str, needle: str) -> bool:
        nonlocal comparisons
        comparisons += 1
        return contains_token(haystack, needle)

    monkeypatch.setattr(efficiency_check, "contains_token", counting)
    counts: dict[int, int] = {}
    for steps in SIZES:
        comparisons = 0
        result = efficiency_check.check_efficiency(_lookups(steps), Efficiency(), Tools())
        assert result.reason.startswith("1 wasted turn, ")
        counts[steps] = comparisons
    # One-word values are looked up; a longer one is searched only where its rarest word is.
    _linear(counts, 1)


@pytest.mark.parametrize("same_name", [True, False])
def test_building_a_trajectory_compares_each_step_with_the_steps_still_running(
    monkeypatch: pytest.MonkeyPatch, same_name: bool
) -> None:
    # De-duplicating layers, marking parallel calls and nesting model calls compare a step with the
    # steps not yet ended when it starts, not with every step before it.
    compared = {"n": 0}
    contains = builder._contains

    def counted(outer: Any, inner: Any) -> bool:
        compared["n"] += 1
        return contains(outer, inner)

    monkeypatch.setattr(builder, "_contains", counted)
    counts: dict[int, int] = {}
    for steps in SIZES:
        compared["n"] = 0
        calls = [
            ToolCall(
                name="lookup" if same_name else f"lookup{k}",
                span_id=k + 1,
                start_ns=k * 10,
                end_ns=k * 10 + 5,
            )
            for k in range(steps)
        ]
        models = [ModelCall(span_id=10_000 + k, start_ns=k * 10, end_ns=k * 10 + 5) for k in range(steps)]
        trajectory = builder.build_trajectory(TraceContext(trace_id=1), [*calls, *models])
        assert len(trajectory.tool_calls) == steps
        counts[steps] = compared["n"]
    _linear(counts, per_step=4)
