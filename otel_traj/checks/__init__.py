"""Deterministic trajectory checks: pure functions ``(Trajectory, <policy section>, ...) -> CheckResult``.

No check does I/O or compiles anything; regexes and schemas were compiled when the policy loaded.
``BINDERS`` binds each check of the catalog (``otel_traj.check_catalog``) to an agent policy: the
check with its section and severity, or None when the policy leaves the section out.
"""

from collections.abc import Callable
from functools import partial
from typing import Any

from otel_traj.checks.arguments import check_arguments
from otel_traj.checks.budget import check_budget
from otel_traj.checks.claims import check_claims
from otel_traj.checks.confirmation import check_confirmation
from otel_traj.checks.efficiency import check_efficiency
from otel_traj.checks.grounded import check_grounded
from otel_traj.checks.injection import check_injection
from otel_traj.checks.order import check_order
from otel_traj.checks.postconditions import check_postconditions
from otel_traj.checks.recovery import check_recovery
from otel_traj.checks.relations import check_relations
from otel_traj.checks.repeats import check_repeats
from otel_traj.checks.scope import ScopeTracker, check_scope, resolve_subject
from otel_traj.checks.side_effects import check_side_effects
from otel_traj.checks.tools import check_tools
from otel_traj.policy import AgentPolicy, Recovery, ToolContract, Tools
from otel_traj.verdict import CheckResult, Severity

Bound = partial[CheckResult]
Binder = Callable[[AgentPolicy, Severity], Bound | None]


def _section(
    check: Callable[..., CheckResult], keyword: str, section: Callable[[AgentPolicy], Any]
) -> Binder:
    """A check of one policy section, planned when ``section`` gives it (non-empty)."""

    def bind(policy: AgentPolicy, severity: Severity) -> Bound | None:
        value = section(policy)
        return partial(check, **{keyword: value}, severity=severity) if value else None

    return bind


def _contracts(check: Callable[..., CheckResult], needs: Callable[[ToolContract], Any]) -> Binder:
    """A check of the tool contracts, planned when one of them ``needs`` it."""

    def bind(policy: AgentPolicy, severity: Severity) -> Bound | None:
        tools = policy.tools
        if tools is None or not any(needs(c) for c in tools.contracts.values()):
            return None
        return partial(check, tools=tools, severity=severity)

    return bind


def _with_tools(
    check: Callable[..., CheckResult], keyword: str, section: Callable[[AgentPolicy], Any]
) -> Binder:
    """A check of one section that also reads the tool contracts (or none)."""

    def bind(policy: AgentPolicy, severity: Severity) -> Bound | None:
        value = section(policy)
        if value is None:
            return None
        return partial(check, **{keyword: value}, tools=policy.tools or Tools(), severity=severity)

    return bind


def _recovery(policy: AgentPolicy, severity: Severity) -> Bound | None:
    if policy.repeats is None and policy.recovery is None:
        return None
    max_retries = policy.repeats.max_retries if policy.repeats is not None else 2
    recovery = policy.recovery or Recovery()
    return partial(check_recovery, recovery=recovery, max_retries=max_retries, severity=severity)


def _tools(policy: AgentPolicy, severity: Severity) -> Bound | None:
    tools = policy.tools
    if tools is None or not (tools.allow or tools.deny):
        return None
    return partial(check_tools, tools=tools, severity=severity)


# One per check of the catalog, in its order (``tests/test_check_catalog.py`` keeps the two equal).
BINDERS: dict[str, Binder] = {
    "order": _section(check_order, "rules", lambda p: p.order),
    "scope": _section(check_scope, "scope", lambda p: p.scope if p.scope and p.scope.arguments else None),
    "repeats": _section(check_repeats, "repeats", lambda p: p.repeats),
    "recovery": _recovery,
    "side_effects": _contracts(check_side_effects, lambda c: c.side_effect),
    "arguments": _contracts(check_arguments, lambda c: c.json_schema is not None),
    "grounded": _contracts(check_grounded, lambda c: c.grounded),
    "tools": _tools,
    "postconditions": _contracts(check_postconditions, lambda c: c.postconditions),
    "relations": _contracts(check_relations, lambda c: c.relations),
    "budget": _section(check_budget, "budget", lambda p: p.budget),
    "claims": _section(check_claims, "rules", lambda p: p.claims),
    "confirmation": _section(
        check_confirmation,
        "confirmation",
        lambda p: p.confirmation if p.confirmation and p.confirmation.tools else None,
    ),
    "efficiency": _with_tools(check_efficiency, "efficiency", lambda p: p.efficiency),
    "injection": _with_tools(check_injection, "injection", lambda p: p.injection),
}

__all__ = [
    "BINDERS",
    "ScopeTracker",
    "check_arguments",
    "check_budget",
    "check_claims",
    "check_confirmation",
    "check_efficiency",
    "check_grounded",
    "check_injection",
    "check_order",
    "check_postconditions",
    "check_recovery",
    "check_relations",
    "check_repeats",
    "check_scope",
    "check_side_effects",
    "check_tools",
    "resolve_subject",
]
