"""What a conversation keeps of one graded trace: counts, tokens, its subject and a line per tool
call (name, an argument fingerprint, a redacted label, the scoped values); with a ``confirmation``
policy, also the trace's messages (redacted and cut), the approval tools that succeeded in it and the
high-risk calls it left unconfirmed. Never spans or raw arguments, so a conversation of many turns
costs little memory and its summaries can travel in ``gen_ai.evaluation.result`` events to the
replica that grades the conversation."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_traj.checks import confirmation as confirmation_check
from otel_traj.checks.base import args_key, label, step_id
from otel_traj.checks.confirmation import Message
from otel_traj.checks.scope import resolve_subject
from otel_traj.cost import run_cost
from otel_traj.policy import AgentPolicy, Scope
from otel_traj.policy.rules import Confirmation
from otel_traj.redact import redact_text
from otel_traj.steps import ToolCall, span_hex
from otel_traj.verdict import Verdict
from otel_traj.versions import Versions

# Tool calls kept per trace; a run beyond it still counts every call in ``tool_calls``.
MAX_CALLS = 256
# Characters of a call's label (``name(arguments)``, redacted).
LABEL_CHARS = 120
_ENTRY_BYTES = 64
# Characters kept of a message (after redaction): a user's head, where a yes is; an agent's text up
# to its last question mark, the question the next yes answers.
MESSAGE_CHARS = 300
# A trace's messages as ``confirmation.trace_messages`` gives them: the user's, then the answer.
MAX_MESSAGES = 2
# Timestamps and counts read from another replica's summary: what a signed 64-bit integer holds.
_MAX_INT = 1 << 63


@dataclass(slots=True, frozen=True)
class CallSummary:
    """One tool call: ``key`` fingerprints its arguments (None when they were not captured)."""

    step_id: str
    name: str
    key: str | None
    label: str
    scoped: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True, frozen=True)
class TraceSummary:
    """One graded trace of a conversation. ``parent_span``: the agent (else root) span id in hex."""

    trace_id: str
    conversation_id: str
    agent: str
    service_name: str | None
    parent_span: str | None
    start_ns: int
    end_ns: int
    outcome: str
    score: float
    complete: bool
    tool_calls: int
    model_turns: int
    input_tokens: int
    output_tokens: int
    calls: tuple[CallSummary, ...] = ()
    subject: str | None = None
    subject_source: str = ""
    # ``confirmation``: the user's message and the agent's answer, the approval tools that succeeded,
    # and (step id, tool, the agent asked in this trace before it) of each call left unconfirmed.
    messages: tuple[Message, ...] = ()
    approvals: tuple[str, ...] = ()
    unconfirmed: tuple[tuple[str, str, bool], ...] = ()
    # The run's cost in US dollars (``None`` with the reason when a model call's price is unknown)
    # and the versions that produced it.
    cost_usd: float | None = None
    cost_reason: str | None = None
    versions: Versions = field(default_factory=Versions)
    # Spans of the trace with GenAI evidence that could not be read: the conversation is unverified.
    unreadable: int = 0

    @property
    def size_bytes(self) -> int:
        """An estimate of what the summary holds, for the conversations' byte bound."""
        texts = sum(len(c.label) + len(c.name) + 2 * _ENTRY_BYTES for c in self.calls)
        texts += sum(len(m.text) + _ENTRY_BYTES for m in self.messages)
        texts += sum(len(a) + _ENTRY_BYTES for a in self.approvals)
        texts += sum(len(s) + len(t) + _ENTRY_BYTES for s, t, _ in self.unconfirmed)
        scoped = sum(len(a) + len(v) for c in self.calls for a, v in c.scoped)
        v = self.versions
        texts += len(self.cost_reason or "") + sum(len(m) + _ENTRY_BYTES for m in v.models)
        texts += sum(len(s or "") for s in (v.agent, v.prompt, v.policy, v.tool_contracts))
        return (
            4 * (texts + scoped + len(self.conversation_id) + len(self.agent) + len(self.subject or "")) + 512
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "conversation_id": self.conversation_id,
            "agent": self.agent,
            "service_name": self.service_name,
            "parent_span": self.parent_span,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "outcome": self.outcome,
            "score": self.score,
            "complete": self.complete,
            "tool_calls": self.tool_calls,
            "model_turns": self.model_turns,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "calls": [[c.step_id, c.name, c.key, c.label, [list(p) for p in c.scoped]] for c in self.calls],
            "subject": self.subject,
            "subject_source": self.subject_source,
            "messages": [[m.role, m.text] for m in self.messages],
            "approvals": list(self.approvals),
            "unconfirmed": [list(u) for u in self.unconfirmed],
            "cost_usd": self.cost_usd,
            "cost_reason": self.cost_reason,
            "versions": self.versions.to_dict(),
            "unreadable": self.unreadable,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceSummary:
        """The summary ``to_dict`` wrote; a KeyError, TypeError, ValueError or OverflowError on anything
        else (timestamps and counts beyond 64 bits, scores and costs that are not finite included)."""
        calls = tuple(
            CallSummary(
                str(step), str(name), None if key is None else str(key), str(text),
                tuple((str(a), str(v)) for a, v in scoped),
            )
            for step, name, key, text, scoped in data["calls"][:MAX_CALLS]
        )  # fmt: skip
        subject = data.get("subject")
        return cls(
            trace_id=f"{int(str(data['trace_id']), 16):032x}",
            conversation_id=_text(data["conversation_id"]),
            agent=_text(data["agent"]),
            service_name=None if data.get("service_name") is None else str(data["service_name"]),
            parent_span=None if data.get("parent_span") is None else str(data["parent_span"]),
            start_ns=_count(data["start_ns"]),
            end_ns=_count(data["end_ns"]),
            outcome=str(data["outcome"]),
            score=_finite(data["score"]),
            complete=bool(data["complete"]),
            tool_calls=_count(data["tool_calls"]),
            model_turns=_count(data["model_turns"]),
            input_tokens=_count(data["input_tokens"]),
            output_tokens=_count(data["output_tokens"]),
            calls=calls,
            subject=None if subject is None else str(subject),
            subject_source=str(data.get("subject_source", "")),
            # Absent from the summaries of replicas that predate them.
            messages=tuple(_message(role, text) for role, text in data.get("messages", [])[:MAX_MESSAGES]),
            approvals=tuple(str(a) for a in data.get("approvals", [])[:MAX_CALLS]),
            unconfirmed=tuple(
                (str(step), str(tool), bool(asked))
                for step, tool, asked in data.get("unconfirmed", [])[:MAX_CALLS]
            ),
            cost_usd=None if data.get("cost_usd") is None else _finite(data["cost_usd"]),
            cost_reason=None if data.get("cost_reason") is None else str(data["cost_reason"]),
            versions=Versions.from_dict(_mapping(data.get("versions") or {})),
            unreadable=_count(data.get("unreadable", 0)),
        )


def _count(value: Any) -> int:
    """A timestamp or a count as the store's 64-bit integers hold it."""
    number = int(value)
    if not 0 <= number < _MAX_INT:
        raise ValueError(f"{value!r} is not between 0 and 2**63")
    return number


def _finite(value: Any) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite number")
    return number


def _mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def _message(role: Any, text: Any) -> Message:
    if role not in ("user", "agent"):
        raise ValueError(f"message role {role!r}, expected 'user' or 'agent'")
    return Message(role, str(text)[:MESSAGE_CHARS])


def fingerprint(key: Any) -> str:
    """The same in every process: ``args_key`` holds only tuples, strings, numbers and None."""
    return hashlib.sha256(repr(key).encode("utf-8", "replace")).hexdigest()[:16]


def summarize(verdict: Verdict, policy: AgentPolicy | None) -> TraceSummary | None:
    """The summary of a graded trace, None when it has no conversation id. ``policy`` (the trace's
    agent policy) says which arguments are scoped and how the subject is found."""
    traj = verdict.trajectory
    if not traj.conversation_id:
        return None
    scope = policy.scope if policy is not None else None
    calls = tuple(_call(call, scope) for call in traj.tool_calls[:MAX_CALLS])
    subject, source = _subject(verdict, policy, calls)
    confirmation = policy.confirmation if policy is not None else None
    messages, approvals, unconfirmed = (
        _confirmation(verdict, confirmation)
        if confirmation is not None and confirmation.tools
        else ((), (), ())
    )
    agent_span = traj.agent_runs[0].span_id if traj.agent_runs else traj.root_span_id
    cost = run_cost(traj)
    return TraceSummary(
        trace_id=traj.trace_hex,
        conversation_id=traj.conversation_id,
        agent=traj.agent_label,
        service_name=traj.service_name,
        parent_span=span_hex(agent_span) if agent_span is not None else None,
        start_ns=traj.start_ns,
        end_ns=traj.end_ns,
        outcome=verdict.outcome,
        score=round(verdict.score, 4),
        complete=traj.complete,
        tool_calls=len(traj.tool_calls),
        model_turns=traj.model_turns,
        input_tokens=traj.tokens.input,
        output_tokens=traj.tokens.output,
        calls=calls,
        subject=subject,
        subject_source=source,
        messages=messages,
        approvals=approvals,
        unconfirmed=unconfirmed,
        unreadable=len(traj.unreadable),
        cost_usd=cost.total_usd,
        cost_reason=cost.reason,
        versions=verdict.versions,
    )


def _cut(message: Message) -> Message:
    """Redacted, then cut (a card number cut in half no longer looks like one)."""
    text = redact_text(message.text)
    if len(text) <= MESSAGE_CHARS:
        return Message(message.role, text)
    if message.role == "user":
        return Message("user", text[: MESSAGE_CHARS - 1] + "…")
    end = text.rfind("?") + 1 or len(text)
    return Message("agent", "…" + text[max(0, end - MESSAGE_CHARS + 1) : end])


def _confirmation(
    verdict: Verdict, confirmation: Confirmation
) -> tuple[tuple[Message, ...], tuple[str, ...], tuple[tuple[str, str, bool], ...]]:
    """What the conversation needs to re-check the calls this trace's ``confirmation`` check failed."""
    traj = verdict.trajectory
    failed = {
        step
        for check in verdict.checks
        if check.name == confirmation_check.NAME and check.status == "fail"
        for step in check.steps
    }
    asked_before = confirmation_check.questions_before(traj)
    unconfirmed = tuple(
        (step_id(call), call.name, asked_before(call)) for call in traj.tool_calls if step_id(call) in failed
    )
    return (
        tuple(_cut(m) for m in confirmation_check.trace_messages(traj)),
        tuple(sorted(confirmation_check.approvals(traj, confirmation))),
        unconfirmed[:MAX_CALLS],
    )


def _call(call: ToolCall, scope: Scope | None) -> CallSummary:
    key = args_key(call)
    scoped: tuple[tuple[str, str], ...] = ()
    names = scope.arguments.get(call.name) if scope is not None else None
    if names and call.arguments is not None:
        scoped = tuple((n, str(call.arguments[n]).strip()) for n in names if n in call.arguments)
    text = label(call)
    if len(text) > LABEL_CHARS:
        text = text[: LABEL_CHARS - 1] + "…"
    return CallSummary(step_id(call), call.name, None if key is None else fingerprint(key), text, scoped)


def _subject(
    verdict: Verdict, policy: AgentPolicy | None, calls: tuple[CallSummary, ...]
) -> tuple[str | None, str]:
    """The trace's subject as its scope check resolves it (attribute, pattern, then first use)."""
    if policy is None or policy.scope is None:
        return None, ""
    traj = verdict.trajectory
    found = resolve_subject(policy.scope, traj.attributes, traj.conversation_id, traj.user_input)
    if found is not None:
        return found
    if policy.scope.subject.from_first_use:
        for call in calls:
            if call.scoped:
                return call.scoped[0][1], f"first use by {call.name}"
    return None, ""
