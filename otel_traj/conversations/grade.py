"""Grading a conversation from its traces' summaries, and grouping graded traces into conversations.

Every front door grades a conversation with ``grade_conversation`` over the same summaries, so the
same traces give the same conversation verdict offline, in-process and in ``serve``: the traces are
put in start order first, whatever order they arrived in.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from otel_traj.conversations import checks
from otel_traj.conversations.summary import TraceSummary, summarize
from otel_traj.conversations.verdict import ConversationVerdict
from otel_traj.grader import classify, score
from otel_traj.policy import AgentPolicy, Conversation, Policy
from otel_traj.policy.rules import Confirmation
from otel_traj.verdict import CheckResult, Severity, Verdict
from otel_traj.verification import unverified_traces
from otel_traj.versions import contracts_hash, merged_versions


def agent_policy(policy: Policy, trace: TraceSummary) -> AgentPolicy:
    """``agents.<name>`` for the agent name, else the service name, else ``defaults`` (as for a trace)."""
    for name in (trace.agent, trace.service_name):
        if name is not None and name in policy.agents:
            return policy.agents[name]
    return policy.defaults


def grade_conversation(
    traces: Iterable[TraceSummary],
    rules: Conversation,
    *,
    complete: bool = True,
    scoped: bool = True,
    policy_version: str | None = None,
    confirmation: Confirmation | None = None,
    confirmation_severity: Severity = "critical",
    tool_contracts: str | None = None,
) -> ConversationVerdict:
    """``scoped``: the agent's policy has a ``scope`` section (how the subject is found).
    ``confirmation``: the agent's, whose calls left unconfirmed by their trace an earlier trace may
    confirm (``conversation_confirmation``, with the trace check's severity). ``tool_contracts``: the
    hash of the agent's tool contracts, for the verdict's versions."""
    ordered = sorted(traces, key=lambda t: (t.start_ns, t.trace_id))
    if not ordered:
        raise ValueError("a conversation has at least one trace")
    severity = rules.severity
    results: list[CheckResult] = []
    if rules.budget is not None:
        results.append(checks.check_budget(ordered, rules.budget, severity.budget))
    if rules.scope:
        results.append(checks.check_scope(ordered, severity.scope, scoped))
    if rules.repeats is not None:
        results.append(checks.check_repeats(ordered, rules.repeats, severity.repeats))
    if confirmation is not None and confirmation.tools:
        results.append(checks.check_confirmation(ordered, confirmation.user_pattern, confirmation_severity))
    unread = [t for t in ordered if t.unreadable]
    if unread:
        results = unverified_traces(results, [t.trace_id for t in unread])
    return ConversationVerdict(
        conversation_id=ordered[0].conversation_id,
        agent=ordered[0].agent,
        traces=ordered,
        checks=results,
        outcome=classify(results, complete, verified=not unread),
        score=score(results),
        complete=complete,
        policy_version=policy_version,
        graded_at_ns=time.time_ns(),
        versions=merged_versions((t.versions for t in ordered), policy_version, tool_contracts),
    )


def grade_with_policy(
    policy: Policy, traces: Sequence[TraceSummary], *, complete: bool = True
) -> ConversationVerdict | None:
    """The conversation's verdict under the policy of its first trace's agent; None when that
    policy has no ``conversation`` section."""
    first = min(traces, key=lambda t: (t.start_ns, t.trace_id))
    rules = agent_policy(policy, first)
    if rules.conversation is None:
        return None
    return grade_conversation(
        traces,
        rules.conversation,
        complete=complete,
        scoped=rules.scope is not None,
        policy_version=policy.policy_version,
        tool_contracts=contracts_hash(rules),
        confirmation=rules.confirmation,
        confirmation_severity=rules.severity_of("confirmation"),
    )


def conversation_verdicts(verdicts: Iterable[Verdict], policy: Policy) -> list[ConversationVerdict]:
    """Offline: the given traces grouped by conversation id, each conversation complete (the files
    are all there is), ordered by start."""
    groups: dict[str, list[TraceSummary]] = {}
    for verdict in verdicts:
        rules = policy.resolve(verdict.trajectory)
        if rules.conversation is None:
            continue
        summary = summarize(verdict, rules)
        if summary is not None:
            groups.setdefault(summary.conversation_id, []).append(summary)
    graded = (grade_with_policy(policy, traces) for traces in groups.values())
    out = [v for v in graded if v is not None]
    out.sort(key=lambda v: (v.start_ns, v.conversation_id))
    return out
