"""``scope``: every scoped argument equals the trajectory's subject (e.g. the customer being served).

The subject is resolved in this order: the first configured attribute found on the trace; the
``pattern`` searched in that attribute, the conversation id, then the user's input; finally, with
``from_first_use``, the first value used for a scoped argument. :class:`ScopeTracker` applies the
same rule one tool call at a time so the live pipeline can page on the violating call itself; the
batch check is the tracker run over the whole trajectory, so both always agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.checks.base import NOT_CAPTURED, failed, one_line, passed, skipped, step_id
from otel_traj.policy import AgentPolicy, Scope
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "scope"


def resolve_subject(
    scope: Scope, attributes: Mapping[str, Any], conversation_id: str | None, user_input: str | None
) -> tuple[str, str] | None:
    """``(subject, where it came from)`` from the trace's data, or ``None`` when it is not there."""
    subject = scope.subject
    pattern = subject.pattern
    for key in subject.attributes:
        value = attributes.get(key)
        if value is None or value == "":
            continue
        text = str(value)
        if pattern is not None and (match := pattern.search(text)) is not None:
            return match.group(0), key
        return text, key
    if pattern is not None:
        for where, found in (("conversation id", conversation_id), ("user input", user_input)):
            if found and (match := pattern.search(found)) is not None:
                return match.group(0), where
    return None


def _scoped_arguments(call: ToolCall, names: tuple[str, ...]) -> list[tuple[str, str]] | None:
    """The scoped ``(argument, value)`` pairs of a call, ``None`` when its arguments are unknown."""
    if call.arguments is None:
        return None
    return [(n, str(call.arguments[n]).strip()) for n in names if n in call.arguments]


class ScopeTracker:
    """Incremental scope check for a run in flight: ``observe`` each tool call as its span ends."""

    __slots__ = ("checked", "not_captured", "scope", "severity", "source", "steps", "subject", "violations")

    def __init__(self, policy: AgentPolicy) -> None:
        self._init(policy.scope, policy.severity_of("scope"))

    @classmethod
    def for_scope(cls, scope: Scope, severity: Severity) -> ScopeTracker:
        tracker = cls.__new__(cls)
        tracker._init(scope, severity)
        return tracker

    def _init(self, scope: Scope | None, severity: Severity) -> None:
        self.scope = scope
        self.severity = severity
        self.subject: str | None = None
        self.source = ""
        self.checked = 0
        self.not_captured = 0
        self.violations: list[str] = []
        self.steps: list[str] = []

    def _resolve(
        self, attributes: Mapping[str, Any], conversation_id: str | None, user_input: str | None
    ) -> None:
        if self.subject is None and self.scope is not None:
            found = resolve_subject(self.scope, attributes, conversation_id, user_input)
            if found is not None:
                self.subject, self.source = found

    def observe(
        self,
        call: ToolCall,
        attributes: Mapping[str, Any],
        user_input: str | None,
        conversation_id: str | None = None,
    ) -> CheckResult | None:
        """Return a failing result when ``call`` used another subject's data, else ``None``."""
        if self.scope is None:
            return None
        names = self.scope.arguments.get(call.name)
        if not names:
            return None
        arguments = _scoped_arguments(call, names)
        if arguments is None:
            self.not_captured += 1
            return None
        self._resolve(attributes, conversation_id, user_input)
        problems = []
        for name, value in arguments:
            if self.subject is None:
                if not self.scope.subject.from_first_use:
                    continue
                self.subject, self.source = value, f"first use by {call.name}"
            self.checked += 1
            if value != self.subject:
                problems.append(f"{call.name} used {name}={value}, subject is {self.subject}")
        if not problems:
            return None
        self.violations.extend(problems)
        self.steps.append(step_id(call))
        return failed(NAME, self.severity, one_line(problems), (step_id(call),))

    def result(self) -> CheckResult:
        """The check's result over every call observed so far."""
        if self.violations:
            return failed(NAME, self.severity, one_line(self.violations), tuple(self.steps))
        missing = f", {self.not_captured} scoped calls without arguments" if self.not_captured else ""
        if self.checked:
            return passed(
                NAME,
                self.severity,
                f"{self.checked} scoped arguments match subject {self.subject} (from {self.source}){missing}",
            )
        if self.not_captured:
            return skipped(NAME, self.severity, f"{NOT_CAPTURED} for {self.not_captured} scoped calls")
        if self.subject is None and self.scope is not None and not self.scope.subject.from_first_use:
            return skipped(NAME, self.severity, "subject not found on the trace")
        return passed(NAME, self.severity, "no scoped tool called")


def check_scope(traj: Trajectory, scope: Scope, severity: Severity = "critical") -> CheckResult:
    tracker = ScopeTracker.for_scope(scope, severity)
    for call in traj.tool_calls:
        tracker.observe(call, traj.attributes, traj.user_input, traj.conversation_id)
    return tracker.result()
