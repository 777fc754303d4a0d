"""Checks that run while a trace is still open: the scope check, per tool call, as each span ends.

Paging on another customer's data must not wait for a slow agent run to finish. The worker hands each
newly ended tool call to the trace's ``LiveScope``; the final verdict repeats the same result.

The live checks read the run's steps and never change them: a call joined to the model's request, as
the builder will join it, is a value of the check's own, and so is what it remembers between batches.
"""

from __future__ import annotations

from otel_traj.builder import attribute_conversation_id
from otel_traj.checks.scope import ScopeTracker
from otel_traj.joins import RequestKey, Requests, normalized
from otel_traj.pipeline import LiveChecker, LiveFactory
from otel_traj.policy import Policy
from otel_traj.records import TraceContext
from otel_traj.steps import ModelCall, ToolCall
from otel_traj.verdict import CheckResult


class LiveScope:
    def __init__(self, tracker: ScopeTracker) -> None:
        self._tracker = tracker
        # The requests already joined to a call of this run, as the builder joins them, and their
        # index over the run's model calls so far (built again only when more have arrived).
        self._taken: set[RequestKey] = set()
        self._requests: Requests | None = None

    def observe(self, call: ToolCall, context: TraceContext, models: list[ModelCall]) -> CheckResult | None:
        if self._requests is None or self._requests.models is not models:
            self._requests = Requests(models, self._taken)
        key = self._requests.find(call)
        joined = normalized(call) if key is None else self._requests.take(call, key)
        attributes = context.attributes
        # The agent span has not ended: the user's message is read from the first model request,
        # the conversation id from the captured attributes; both only while the subject is unknown.
        user_input = conversation = None
        if self._tracker.subject is None:
            user_input = models[0].input_text if models else None
            conversation = attribute_conversation_id(attributes)
        return self._tracker.observe(joined, attributes, user_input, conversation)


def live_scope(policy: Policy) -> LiveFactory:
    """Per trace, a scope tracker for the service's policy (the agent span has not ended yet, so
    ``agents.<name>`` is matched against the service name here)."""

    def make(context: TraceContext) -> LiveChecker | None:
        agent_policy = policy.for_agent(context.service_name)
        if agent_policy.scope is None or not agent_policy.scope.arguments:
            return None
        return LiveScope(ScopeTracker(agent_policy))

    return make


def subject_attributes(policy: Policy) -> tuple[str, ...]:
    """Every span attribute a scope subject may be read from, across the policy's agents: the
    assembler captures these from any span of a trace."""
    keys: dict[str, None] = {}
    for agent_policy in (policy.defaults, *policy.agents.values()):
        if agent_policy.scope is not None:
            keys.update(dict.fromkeys(agent_policy.scope.subject.attributes))
    return tuple(keys)
