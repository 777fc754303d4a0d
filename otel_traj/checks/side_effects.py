"""``side_effects``: duplicate writes, and retries of a write that change its idempotency key."""

from __future__ import annotations

import re
from typing import Any

from otel_traj.checks.base import (
    NOT_CAPTURED,
    ArgsKey,
    CallKeys,
    args_key,
    count,
    failure,
    label,
    passed,
    skipped,
    step_id,
)
from otel_traj.policy import Tools
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "side_effects"

# Argument names that, by convention, make a write idempotent; used when a contract names none.
_IDEMPOTENCY_NAME = re.compile(r"(?i)idempot|dedup|client_?request_?id|request_?key")


def _idempotency_key(call: ToolCall, declared: str | None) -> str | None:
    if call.arguments is None:
        return None
    if declared is not None:
        return declared if declared in call.arguments else None
    return next((k for k in call.arguments if _IDEMPOTENCY_NAME.search(k)), None)


def _rekeyed(earlier: dict[str, Any], later: dict[str, Any], key: str) -> bool:
    """Same request except for a different idempotency key: the dedup guard was defeated."""
    if earlier.get(key) == later.get(key):
        return False
    return {k: v for k, v in earlier.items() if k != key} == {k: v for k, v in later.items() if k != key}


def check_side_effects(
    traj: Trajectory, tools: Tools, severity: Severity = "critical", keys: CallKeys | None = None
) -> CheckResult:
    """``keys``: ``args_keys(traj.tool_calls)`` when the caller has them already."""
    contracts = tools.contracts
    successes: dict[tuple[str, ArgsKey], list[ToolCall]] = {}
    history: dict[str, list[dict[str, Any]]] = {}
    problems: list[str] = []
    steps: list[str] = []
    writes = 0
    not_captured = 0
    calls = traj.tool_calls
    for index, call in enumerate(calls):
        contract = contracts.get(call.name)
        if contract is None or not contract.side_effect or not call.observed:
            continue
        writes += 1
        key = args_key(call) if keys is None else keys[index]
        if key is None:
            not_captured += 1
            continue
        if call.ok:
            successes.setdefault((call.name, key), []).append(call)
        idem = _idempotency_key(call, contract.idempotency_key)
        if idem is not None and call.arguments is not None:
            for earlier in history.get(call.name, []):
                if idem in earlier and _rekeyed(earlier, call.arguments, idem):
                    problems.append(
                        f"{call.name} retried with a new {idem} ({earlier[idem]} -> {call.arguments[idem]})"
                    )
                    steps.append(step_id(call))
                    break
            history.setdefault(call.name, []).append(call.arguments)
    for calls in successes.values():
        if len(calls) > 1:
            problems.append(f"{label(calls[0])} succeeded {len(calls)} times with the same arguments")
            steps.extend(step_id(c) for c in calls[1:])
    if problems:
        return failure(NAME, severity, problems, steps)
    if writes and not_captured == writes:
        return skipped(NAME, severity, f"{NOT_CAPTURED} for {writes} side-effecting calls")
    missing = f" ({NOT_CAPTURED} for {not_captured})" if not_captured else ""
    return passed(NAME, severity, f"{count(writes, 'side-effecting call')}, no duplicate write{missing}")
