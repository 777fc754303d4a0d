"""``confirmation``: a high-risk action needs the user's yes, or an approval tool's, before it.

Each call of a tool in ``confirmation.tools`` (a memory write by its name, ``memory:delete_memory``)
must follow either a user message matching ``confirmation.user_pattern`` that came after the
agent's last question, or a successful call of one of ``confirmation.approval_tools`` that ended
before it started. The user's messages are the
last user message of each model request (``ModelCall.input_text``; the run's input when no request
recorded one), the agent's are each response's text.

Earlier traces of the same conversation count too: :func:`trace_messages` turns an earlier trace
into the messages it adds, and :func:`check_confirmation` takes them (with the approval tools that
succeeded there) as ``earlier`` and ``approved_earlier``. The conversation grader, which holds
summaries rather than trajectories, re-checks the calls a trace left unconfirmed with
:func:`confirming` over the earlier traces' messages, when :func:`asked_before` says the agent did
not ask again in the call's own trace.

Linear in the size of the trajectory: the messages up to each model request are built and searched
once, and a call finds the successful approval calls that ended before it by a binary search over
their ends; rebuilding the messages before each high-risk call made 2000 of them take 0.45 s.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from otel_traj.checks.base import count, failure, passed, skipped, step_id
from otel_traj.checks.order import finished_before
from otel_traj.policy.rules import Confirmation
from otel_traj.steps import ModelCall, ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "confirmation"


@dataclass(frozen=True, slots=True)
class Message:
    role: Literal["user", "agent"]
    text: str


def trace_messages(traj: Trajectory) -> list[Message]:
    """What an earlier trace of the conversation said: its user message, then its answer."""
    messages = [Message("user", traj.user_input)] if traj.user_input else []
    if traj.final_answer:
        messages.append(Message("agent", traj.final_answer))
    return messages


def approvals(traj: Trajectory, confirmation: Confirmation) -> frozenset[str]:
    """The approval tools that succeeded in ``traj`` (for the traces after it)."""
    names = frozenset(confirmation.approval_tools)
    return frozenset(c.name for c in traj.tool_calls if c.name in names and c.observed and c.ok)


def asks(message: Message) -> bool:
    return message.role == "agent" and "?" in message.text


def confirming(messages: Sequence[Message], pattern: re.Pattern[str]) -> int | None:
    """The index of the first user message matching ``pattern`` after the agent's last question (or,
    when the agent asked nothing, anywhere); ``None`` when there is none."""
    start = next((i + 1 for i in range(len(messages) - 1, -1, -1) if asks(messages[i])), 0)
    return next(
        (
            i
            for i in range(start, len(messages))
            if messages[i].role == "user" and pattern.search(messages[i].text)
        ),
        None,
    )


def confirmed(messages: Iterable[Message], pattern: re.Pattern[str]) -> bool:
    """A user message matching ``pattern`` came after the agent's last question (or, when the agent
    asked nothing, anywhere)."""
    return confirming(list(messages), pattern) is not None


def _requests_before(traj: Trajectory, call: ToolCall) -> Sequence[ModelCall]:
    models = traj.model_calls
    if call.turn is not None:
        return models[: call.turn + 1]
    return [m for m in models if not call.start_ns or m.start_ns <= call.start_ns]


def _messages_before(traj: Trajectory, call: ToolCall) -> list[Message]:
    messages: list[Message] = []
    last_user: str | None = None
    for model in _requests_before(traj, call):
        text = model.input_text
        # Every request repeats the conversation so far: a message is new when it changes.
        if text and text != last_user:
            messages.append(Message("user", text))
            last_user = text
        if model.output_text:
            messages.append(Message("agent", model.output_text))
    if last_user is None and traj.user_input:
        messages.insert(0, Message("user", traj.user_input))
    return messages


class _Said:
    """Whether a user message matching the pattern came after the agent's last question, and
    whether any user message came at all, after each message in turn."""

    __slots__ = ("confirmed", "pattern", "user")

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.confirmed = False
        self.user = False

    def add(self, message: Message) -> tuple[bool, bool]:
        if message.role == "user":
            self.user = True
            if self.pattern.search(message.text):
                self.confirmed = True
        elif asks(message):
            self.confirmed = False
        return self.confirmed, self.user


class _Turns:
    """The trace's messages up to each model request, built once: a call's messages are those of
    the requests before it, a prefix of ``traj.model_calls`` (sorted by start, as assembled)."""

    def __init__(self, traj: Trajectory) -> None:
        self.traj = traj
        models = traj.model_calls
        self.starts = [m.start_ns for m in models]
        self.in_order = all(a <= b for a, b in zip(self.starts, self.starts[1:], strict=False))
        # The messages each request adds; the first request with an input (the run's input stands
        # in for the user's message before it).
        self.added: list[list[Message]] = [[] for _ in models]
        self.first_input = len(models)
        last_user: str | None = None
        for index, model in enumerate(models):
            text = model.input_text
            if text and text != last_user:
                self.added[index].append(Message("user", text))
                if last_user is None:
                    self.first_input = index
                last_user = text
            if model.output_text:
                self.added[index].append(Message("agent", model.output_text))
        self.asked = [False]
        for added in self.added:
            self.asked.append(self.asked[-1] or any(asks(m) for m in added))

    def prefix(self, call: ToolCall) -> int | None:
        """How many requests came before ``call``; ``None`` when they are not a prefix."""
        count = len(self.starts)
        if call.turn is not None:
            return len(range(count)[: call.turn + 1])
        if not call.start_ns:
            return count
        if self.in_order:
            return bisect.bisect_right(self.starts, call.start_ns)
        return None

    def asked_before(self, call: ToolCall) -> bool:
        k = self.prefix(call)
        if k is None:
            return any(asks(m) for m in _messages_before(self.traj, call))
        return self.asked[k]

    def said(self, earlier: Sequence[Message], pattern: re.Pattern[str]) -> _Confirmations:
        return _Confirmations(self, earlier, pattern)


class _Confirmations:
    """(confirmed, any user message) for the messages up to each request, each searched once."""

    def __init__(self, turns: _Turns, earlier: Sequence[Message], pattern: re.Pattern[str]) -> None:
        self.turns, self.earlier, self.pattern = turns, earlier, pattern
        said = _Said(pattern)
        start = (False, False)
        for message in earlier:
            start = said.add(message)
        self.without = self._run(start, turns.added, pattern)
        # While no request has an input, the run's input is the user's message before them.
        self.with_input: list[tuple[bool, bool]] = []
        user_input = turns.traj.user_input
        if user_input:
            said = _Said(pattern)
            said.confirmed, said.user = start
            first = said.add(Message("user", user_input))
            self.with_input = self._run(first, turns.added[: turns.first_input], pattern)

    @staticmethod
    def _run(
        start: tuple[bool, bool], added: list[list[Message]], pattern: re.Pattern[str]
    ) -> list[tuple[bool, bool]]:
        said = _Said(pattern)
        said.confirmed, said.user = start
        states = [start]
        for messages in added:
            state = states[-1]
            for message in messages:
                state = said.add(message)
            states.append(state)
        return states

    def before(self, call: ToolCall) -> tuple[bool, bool]:
        k = self.turns.prefix(call)
        if k is None:
            messages = [*self.earlier, *_messages_before(self.turns.traj, call)]
            return confirmed(messages, self.pattern), any(m.role == "user" for m in messages)
        if k < len(self.with_input):
            return self.with_input[k]
        return self.without[k]


def asked_before(traj: Trajectory, call: ToolCall) -> bool:
    """The agent asked a question in ``traj`` before ``call``: an earlier trace's yes answers an
    older question, not this one."""
    return _Turns(traj).asked_before(call)


def questions_before(traj: Trajectory) -> Callable[[ToolCall], bool]:
    """:func:`asked_before` for many calls of ``traj``, its messages built once."""
    return _Turns(traj).asked_before


class _Approvals:
    """Successful approval calls, by end: whether one ended before a call is a binary search."""

    def __init__(self, traj: Trajectory, approval_tools: frozenset[str]) -> None:
        found = [c for c in traj.tool_calls if c.name in approval_tools and c.observed and c.ok]
        self.ids = {id(c) for c in found}
        self.count = len(found)
        self.ends = sorted(c.end_ns for c in found if c.end_ns)
        self.unended = self.count - len(self.ends)

    def before(self, call: ToolCall) -> bool:
        """One other than ``call`` finished before it (``order.finished_before``)."""
        if not call.start_ns:
            found = self.count
        else:
            found = self.unended + bisect.bisect_right(self.ends, call.start_ns)
        if id(call) in self.ids and finished_before(call, call):
            found -= 1
        return found > 0


def _actions(traj: Trajectory, guarded: frozenset[str]) -> list[ToolCall]:
    """The calls of the guarded tools, with the memory writes a policy guards by their name
    (``memory:delete_memory``), in start order."""
    calls = [c for c in traj.tool_calls if c.name in guarded]
    writes = [w.as_call() for w in traj.memory_writes if w.name in guarded]
    return sorted(calls + writes, key=lambda c: (c.start_ns, c.end_ns)) if writes else calls


def check_confirmation(
    traj: Trajectory,
    confirmation: Confirmation,
    severity: Severity = "critical",
    earlier: Sequence[Message] = (),
    approved_earlier: frozenset[str] = frozenset(),
) -> CheckResult:
    guarded = frozenset(confirmation.tools)
    approval_tools = frozenset(confirmation.approval_tools)
    problems: list[str] = []
    steps: list[str] = []
    unknown: list[str] = []
    actions = 0
    approved = _Approvals(traj, approval_tools)
    said: _Confirmations | None = None
    for call in _actions(traj, guarded):
        actions += 1
        if approved_earlier or approved.before(call):
            continue
        # Built at the first call that needs it: every message is searched once.
        said = said or _Turns(traj).said(earlier, confirmation.user_pattern)
        yes, user = said.before(call)
        if yes:
            continue
        if not user and not approval_tools:
            unknown.append(f"{call.name}: user messages not captured")
            continue
        approval = (
            f" and no successful {' or '.join(sorted(approval_tools))} before it" if approval_tools else ""
        )
        problems.append(
            f"{call.name} was not confirmed: no user message matching "
            f"{confirmation.user_pattern.pattern!r} after the agent's last question{approval}"
        )
        steps.append(step_id(call))
    if problems:
        return failure(NAME, severity, problems, steps)
    if unknown:
        return skipped(NAME, severity, unknown[0])
    if not actions:
        return passed(NAME, severity, "no high-risk tool called")
    return passed(NAME, severity, f"{count(actions, 'high-risk call')} confirmed")
