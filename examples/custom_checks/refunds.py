"""A refund must not exceed the invoice it refunds, as the agent saw that invoice.

Named in a policy as::

    custom:
      - name: refund_matches_invoice
        function: examples.custom_checks.refunds:refund_matches_invoice
        severity: error
        config: {refund_tool: create_refund_request, invoice_tool: list_invoices, tolerance: 0.01}

and in a golden case as the argument matcher of the refund tool::

    "tool_args": {"create_refund_request": {"function": "examples.custom_checks.refunds:same_refund"}}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from otel_traj import CheckConfig, CheckResult, Trajectory
from otel_traj.checks.custom import check_failed, check_passed, check_skipped, step_id


def _invoices(result: str | None) -> dict[str, float]:
    """Invoice id -> amount from a tool result listing invoices (JSON list of objects)."""
    try:
        rows = json.loads(result or "null")
    except ValueError:
        return {}
    if not isinstance(rows, list):
        return {}
    return {
        str(row["invoice_id"]): float(row["amount_yuan"])
        for row in rows
        if isinstance(row, dict) and "invoice_id" in row and isinstance(row.get("amount_yuan"), int | float)
    }


def refund_matches_invoice(trajectory: Trajectory, config: CheckConfig) -> CheckResult:
    """Each refund's ``amount_yuan`` is at most its invoice's amount, read from an earlier successful
    invoice listing; a refund of an invoice the agent never saw fails too."""
    refund_tool = config.get("refund_tool", "create_refund_request")
    invoice_tool = config.get("invoice_tool", "list_invoices")
    tolerance = float(config.get("tolerance", 0.0))
    refunds = [c for c in trajectory.tool_calls if c.name == refund_tool]
    if not refunds:
        return check_passed(f"no {refund_tool} call")
    if any(c.arguments is None for c in refunds):
        return check_skipped("refund arguments not captured")
    known: dict[str, float] = {}
    problems: list[str] = []
    offending: list[str] = []
    for call in trajectory.tool_calls:
        if call.name == invoice_tool and call.ok:
            known.update(_invoices(call.result))
        elif call.name == refund_tool and call.arguments is not None:
            invoice = str(call.arguments.get("invoice_id"))
            amount = call.arguments.get("amount_yuan")
            if invoice not in known:
                problems.append(f"refund of {invoice}, which no earlier {invoice_tool} listed")
            elif not isinstance(amount, int | float) or amount > known[invoice] + tolerance:
                problems.append(f"refund of {amount} for {invoice}, invoiced {known[invoice]:g}")
            else:
                continue
            offending.append(step_id(call))
    if problems:
        return check_failed("; ".join(problems), offending)
    return check_passed(f"{len(refunds)} refund(s) within their invoices")


def same_refund(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    """Golden-case matcher: the same invoice, an amount within one yuan; the reason is free text."""
    amount = actual.get("amount_yuan")
    return (
        actual.get("invoice_id") == expected.get("invoice_id")
        and isinstance(amount, int | float)
        and abs(amount - float(expected.get("amount_yuan", 0))) <= 1
    )
