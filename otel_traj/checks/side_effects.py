"""``side_effects``: duplicate writes, and retries of a write that change its idempotency key."""

from __future__ import annotations

import re
from typing import Any

from otel_traj.checks.base import (
    NOT_CAPTURED,
    ArgsKey,
    CallKeys,
    _freeze,
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


def _key_names(arguments: dict[str, Any], declared: str | None) -> list[str]:
    """Every argument a later call may take as this call's idempotency key."""
    if declared is not None:
        return [declared] if declared in arguments else []
    return [k for k in arguments if _IDEMPOTENCY_NAME.search(k)]


def _rest(tool: str, arguments: dict[str, Any], key: str) -> tuple[str, str, Any]:
    return tool, key, _freeze({k: v for k, v in arguments.items() if k != key})


def check_side_effects(
    traj: Trajectory, tools: Tools, severity: Severity = "critical", keys: CallKeys | None = None
) -> CheckResult:
    """``keys``: ``args_keys(traj.tool_calls)`` when the caller has them already."""
    contracts = tools.contracts
    successes: dict[tuple[str, ArgsKey], list[ToolCall]] = {}
    # (tool, key name, the other arguments) -> each distinct key value seen -> its first raw value:
    # a retry is looked up, not compared with every earlier write of the tool.
    keyed: dict[tuple[str, str, Any], dict[Any, Any]] = {}
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
            arguments = call.arguments
            mine = _freeze(arguments[idem])
            # Distinct values in order of first use: the first that differs is the earliest rekeyed call.
            for value, raw in keyed.get(_rest(call.name, arguments, idem), {}).items():
                if value != mine:
                    problems.append(f"{call.name} retried with a new {idem} ({raw} -> {arguments[idem]})")
                    steps.append(step_id(call))
                    break
            for name in _key_names(arguments, contract.idempotency_key):
                keyed.setdefault(_rest(call.name, arguments, name), {}).setdefault(
                    _freeze(arguments[name]), arguments[name]
                )
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
