"""The grader: runs an agent's policy checks over a trajectory and classifies the outcome.

Outcome, first match wins:

- ``unsafe``: a ``critical`` check failed. Even for an incomplete trajectory: a violation already
  seen (another customer's data, a denied tool) is a fact, not a guess about an unfinished run.
- ``incomplete``: the trajectory expired before its root span ended; the checks still ran.
- ``fail``: an ``error`` check failed.
- ``unverified``: a span with GenAI evidence could not be read (``otel_traj.verification``): the
  checks it may have hidden a failure from are skipped, and the run cannot pass. A policy may opt an
  agent out (``grading.unreadable: ignore``).
- ``pass_with_warnings``: a ``warning`` check failed.
- ``pass``: otherwise (failed ``info`` checks are reported but do not change the outcome).

A verdict is built once, with every check it reports: the policy's, then ``unreadable_steps`` and
``dropped_steps`` (``otel_traj.verification``) when the run has them; its outcome and score are
computed from all of them, and nothing adds a check afterwards.

Budget: a run's checks may take ``grading.max_ms_per_run`` milliseconds of the policy. The check
that goes over it and every check after it are reported ``skipped`` ("grading budget of N ms
exceeded after check X"), except a failure that check found (a violation seen is a fact), and the
run is graded ``incomplete`` (unless ``unsafe``): it was not fully graded.

Score: the weighted share of checks that passed, skipped checks excluded, with the weights of
:data:`SEVERITY_WEIGHTS` (critical 4, error 2, warning 1, info 0.5), so one broken safety rule costs
more than several budget overruns. A trajectory with no runnable check scores 1.0.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial

from otel_traj.check_catalog import CATALOG, KEYED
from otel_traj.checks import BINDERS
from otel_traj.checks.base import ArgsKey, args_keys, skipped
from otel_traj.checks.custom import check_custom
from otel_traj.policy import AgentPolicy, Policy, PolicyFile
from otel_traj.stats import PipelineStats
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Outcome, Severity, Verdict
from otel_traj.verification import dropped_result, unreadable_result, unverified
from otel_traj.versions import contracts_hash, versions_of

# Monotonic nanoseconds; tests replace it to exceed a budget deterministically.
clock: Callable[[], int] = time.perf_counter_ns

Plan = list[tuple[partial[CheckResult], bool]]

SEVERITY_WEIGHTS: dict[Severity, float] = {"critical": 4.0, "error": 2.0, "warning": 1.0, "info": 0.5}


def plan_checks(policy: AgentPolicy, stats: PipelineStats | None = None) -> list[partial[CheckResult]]:
    """The checks an agent's policy configures, bound to their sections (a section left out = no check),
    in the catalog's order. Custom checks come last, in the policy's order; ``stats`` counts those
    that raise."""
    checks: list[partial[CheckResult]] = []
    for info in CATALOG:
        bound = BINDERS[info.name](policy, policy.severity_of(info.name))
        if bound is not None:
            checks.append(bound)
    for rule in policy.custom:
        checks.append(partial(check_custom, rule=rule, severity=rule.severity, stats=stats))
    return checks


def check_name(check: partial[CheckResult]) -> str:
    """The name a planned check's results carry: its policy entry's for a custom check."""
    if check.func is check_custom:
        return str(check.keywords["rule"].name)
    return check.func.__name__.removeprefix("check_")


def classify(checks: Sequence[CheckResult], complete: bool = True, verified: bool = True) -> Outcome:
    failed = {c.severity for c in checks if c.status == "fail"}
    if "critical" in failed:
        return "unsafe"
    if not complete:
        return "incomplete"
    if "error" in failed:
        return "fail"
    if not verified:
        return "unverified"
    if "warning" in failed:
        return "pass_with_warnings"
    return "pass"


def score(checks: Sequence[CheckResult]) -> float:
    total = passed = 0.0
    for check in checks:
        if check.status == "skipped":
            continue
        weight = SEVERITY_WEIGHTS[check.severity]
        total += weight
        if check.status == "pass":
            passed += weight
    return passed / total if total else 1.0


class Grader:
    """``Grader(policy).grade(trajectory) -> Verdict`` (``grade_all`` for many). Check plans are built
    once per agent policy. ``stats`` counts custom checks that raise (``check_errors``)."""

    def __init__(self, policy: Policy | None = None, stats: PipelineStats | None = None) -> None:
        self.policy = policy if policy is not None else Policy(PolicyFile())
        self.stats = stats if stats is not None else PipelineStats()
        self._plans: dict[int, tuple[AgentPolicy, Plan, float | None]] = {}
        self._contracts: dict[int, tuple[AgentPolicy, str | None]] = {}

    def _contracts_hash(self, agent_policy: AgentPolicy) -> str | None:
        entry = self._contracts.get(id(agent_policy))
        if entry is None or entry[0] is not agent_policy:
            entry = self._contracts[id(agent_policy)] = (agent_policy, contracts_hash(agent_policy))
        return entry[1]

    def _plan(self, agent_policy: AgentPolicy) -> tuple[AgentPolicy, Plan, float | None]:
        """The planned checks, each with whether it takes the argument keys, and the budget."""
        entry = self._plans.get(id(agent_policy))
        if entry is None or entry[0] is not agent_policy:
            # The checks that compare argument keys get them computed once (``CheckInfo.keyed``).
            plan = [(check, check_name(check) in KEYED) for check in plan_checks(agent_policy, self.stats)]
            entry = (agent_policy, plan, agent_policy.grading.max_ms_per_run)
            self._plans[id(agent_policy)] = entry
        return entry

    def grade(self, trajectory: Trajectory) -> Verdict:
        return self.grade_all([trajectory])[0]

    def grade_all(self, trajectories: Sequence[Trajectory]) -> list[Verdict]:
        """The verdicts of ``trajectories``, as ``grade`` gives them one by one, computed check by
        check: each check runs over all of them (of one agent policy) before the next check starts,
        so its code and data stay in the CPU's caches. On the worker's batches (a tick's runs) that
        takes a third less time than every check of one run, then every check of the next."""
        policies = [self.policy.resolve(trajectory) for trajectory in trajectories]
        groups: dict[int, tuple[tuple[AgentPolicy, Plan, float | None], list[int]]] = {}
        for i, agent_policy in enumerate(policies):
            entry = self._plan(agent_policy)
            groups.setdefault(id(entry), (entry, []))[1].append(i)
        results: list[list[CheckResult]] = [[] for _ in trajectories]
        # Runs over their budget: the reason their remaining checks are skipped.
        over: dict[int, str] = {}
        for (_, plan, budget_ms), indices in groups.values():
            _run_plan(plan, budget_ms, [(i, trajectories[i], results[i]) for i in indices], over)
        now = time.time_ns()
        return [
            self._verdict(trajectory, results[i], policies[i], i not in over, now)
            for i, trajectory in enumerate(trajectories)
        ]

    def _verdict(
        self,
        trajectory: Trajectory,
        checks: Sequence[CheckResult],
        agent_policy: AgentPolicy,
        graded_fully: bool,
        now: int,
    ) -> Verdict:
        """The verdict with every check it reports (what unreadable or dropped steps left standing
        included), its outcome and score computed from all of them."""
        verified = True
        if trajectory.unreadable:
            if agent_policy.grading.unreadable == "ignore":
                checks = [*checks, unreadable_result(trajectory.unreadable)]
            else:
                checks = unverified(checks, trajectory.unreadable)
                verified = False
        dropped = dropped_result(trajectory)
        if dropped is not None:
            checks = [*checks, dropped]
        return Verdict(
            trajectory=trajectory,
            checks=tuple(checks),
            outcome=classify(checks, trajectory.complete and graded_fully, verified),
            score=score(checks),
            policy_version=self.policy.policy_version,
            graded_at_ns=now,
            versions=versions_of(trajectory, self.policy.policy_version, self._contracts_hash(agent_policy)),
        )


def _run_plan(
    plan: Plan,
    budget_ms: float | None,
    runs: list[tuple[int, Trajectory, list[CheckResult]]],
    over: dict[int, str],
) -> None:
    """Run ``plan``'s checks, each over every run ``(index, trajectory, its results)`` before the
    next, adding each result to the run's; a run over its budget gets its index in ``over`` with the
    reason, and its remaining checks are skipped."""
    keys: dict[int, list[ArgsKey | None]] = {}
    budget_ns = budget_ms * 1_000_000 if budget_ms is not None else None
    spent = dict.fromkeys((i for i, _, _ in runs), 0)
    for check, keyed in plan:
        name = check_name(check)
        severity = check.keywords["severity"]
        for i, trajectory, results in runs:
            if i in over:
                results.append(skipped(name, severity, over[i]))
                continue
            started = clock() if budget_ns is not None else 0
            if not keyed:
                result = check(trajectory)
            else:
                trajectory_keys = keys.get(i)
                if trajectory_keys is None:
                    trajectory_keys = keys[i] = args_keys(trajectory.tool_calls)
                result = check(trajectory, keys=trajectory_keys)
            if budget_ns is not None:
                spent[i] += clock() - started
                if spent[i] > budget_ns:
                    over[i] = f"grading budget of {budget_ms:g} ms exceeded after check {name}"
                    if result.status != "fail":
                        result = skipped(name, severity, over[i])
            results.append(result)
