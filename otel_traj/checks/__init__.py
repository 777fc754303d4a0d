"""Deterministic trajectory checks: pure functions ``(Trajectory, <policy section>, ...) -> CheckResult``.

No check does I/O or compiles anything; regexes and schemas were compiled when the policy loaded.
"""

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

__all__ = [
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
