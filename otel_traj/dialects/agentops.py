"""AgentOps (``agentops`` 0.4+, on OpenTelemetry): its decorators' spans, ``agentops.span.kind``.

Each decorator writes a span ``<name>.<kind>`` with ``agentops.span.kind`` and ``operation.name`` (the
decorator's name): ``@trace`` a ``session`` (the trace's root, AgentOps' "trace"), ``@agent``,
``@tool``, ``@workflow``, ``@operation`` / ``@task`` (a ``task``). A decorated function's arguments
are ``agentops.<kind>.input``, ``{"args": [...], "kwargs": {...}}`` JSON, and its return value
``agentops.<kind>.output`` (JSON; a string bare); ``@trace`` and an ``@agent`` class write
``agentops.entity.input`` / ``.output`` (a class's input is its constructor's arguments, an object as
its ``str()``). ``tool`` spans are tool steps, ``agent`` spans agent steps, ``session`` and
``workflow`` spans agent steps that are workflows (their name yields to an agent's); tasks and the
rest are no steps. A failure is the span's status with an ``exception`` event. What
``agentops.update_trace_metadata`` is given is ``trace.metadata.<key>`` on the session span.

Its CrewAI instrumentation writes spans of the same attribute: ``crewai.workflow`` (``workflow``, the
crew's kickoff), ``<task description>.task`` (``workflow.step``: no step), ``<role>.agent`` (``agent``,
named only by ``agent.role``: no ``operation.name``) and ``<model>.llm`` (``llm``, a model call:
``crewai.llm.LLM.call`` with the request and response flattened as ``gen_ai.prompt.N.*`` /
``gen_ai.completion.0.*``).

AgentOps' OpenAI instrumentation records a chat completion with GenAI keys (``gen_ai.prompt.N.*`` /
``gen_ai.completion.N.*``) but not the calls a response requests: each is a child span
``tool_call.<name>`` of the chat span (``tool.name``, ``tool.parameters``, ``tool.call.id``), a
request, not an execution.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import clip_text, loads, loads_once
from otel_traj.dialects._messages import last_user_text
from otel_traj.dialects.vocabulary import Vocabulary, not_steps
from otel_traj.spanview import SpanView
from otel_traj.steps import StepKind

DIALECT = "agentops"
KIND = "agentops.span.kind"
NAME = "operation.name"
# The CrewAI instrumentation's agent spans name the agent by its role only.
ROLE = "agent.role"
CALL_ID = "tool.call.id"
REQUEST_PREFIX = "tool_call."
KINDS: dict[str, StepKind] = {
    "tool": "tool",
    "agent": "agent",
    "session": "agent",
    "workflow": "agent",
    "llm": "model",
}
# A task or operation is a decorated function of the application's: no tool, model or agent step.
VOCABULARY = Vocabulary(KIND, DIALECT, {**KINDS, **not_steps(("task", "operation"))})
_WORKFLOWS = frozenset({"session", "workflow"})
# Metadata keys a user names a conversation by (AgentOps has no convention of its own).
CONVERSATION_KEYS = tuple(f"trace.metadata.{key}" for key in ("conversation_id", "session_id", "thread_id"))
# An argument AgentOps could not serialize, recorded as its ``str()``: no text of the user's.
_OBJECT = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")


def is_tool(attrs: Mapping[str, Any]) -> bool:
    return attrs.get(KIND) == "tool"


def is_agent(attrs: Mapping[str, Any]) -> bool:
    kind = attrs.get(KIND)
    return isinstance(kind, str) and KINDS.get(kind) == "agent"


def is_workflow(attrs: Mapping[str, Any]) -> bool:
    """A trace (session) or workflow is the application's unit of work around its agents."""
    return attrs.get(KIND) in _WORKFLOWS


def is_request(view: SpanView, attrs: Mapping[str, Any]) -> bool:
    """A span the OpenAI instrumentation writes for one call a response requested."""
    name = view.name
    return (
        CALL_ID in attrs and KIND not in attrs and isinstance(name, str) and name.startswith(REQUEST_PREFIX)
    )


# AgentOps' CrewAI instrumentation (scope ``crewai``) records on each ``LLM.call`` span CrewAI's token
# counter: the agent's usage so far, not the call's.
_RUNNING_TOTALS_SCOPE = "crewai"


def cumulative_usage(view: SpanView, attrs: Mapping[str, Any]) -> bool:
    return attrs.get(KIND) == "llm" and view.scope_name == _RUNNING_TOTALS_SCOPE


def recognize(view: SpanView, attrs: Mapping[str, Any]) -> StepKind | None:
    """A call a response requested, recorded as a span of its own: a tool step marked requested."""
    return "tool" if is_request(view, attrs) else None


def _io(attrs: Mapping[str, Any], which: str) -> Any:
    """The decorator's ``input`` or ``output``: under its kind's key, else the entity's."""
    kind = attrs.get(KIND)
    value = attrs.get(f"agentops.{kind}.{which}") if isinstance(kind, str) else None
    return value if value is not None else attrs.get(f"agentops.entity.{which}")


def tool_arguments(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Any:
    """A tool's arguments, in the decorator's ``{"args", "kwargs"}`` wrapper."""
    return _io(attrs, "input") if is_tool(attrs) else None


def tool_result(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Any:
    return _io(attrs, "output") if is_tool(attrs) else None


def run_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """An agent's or a trace's input: the user's last message of a messages argument, else its first
    text argument (never an object's ``str()``, an ``@agent`` class's constructor arguments)."""
    value = _io(attrs, "input") if is_agent(attrs) else None
    data = loads_once(value) if isinstance(value, str) and value.startswith("{") else None
    if not isinstance(data, Mapping):
        return None
    args, kwargs = data.get("args"), data.get("kwargs")
    values = [
        *(args if isinstance(args, list) else ()),
        *(kwargs.values() if isinstance(kwargs, Mapping) else ()),
    ]
    for found in values:
        text = last_user_text(found, max_chars) if isinstance(found, list) else None
        if text is not None:
            return text
    text = next((v for v in values if isinstance(v, str) and v and not _OBJECT.fullmatch(v)), None)
    return clip_text(text, max_chars)


def run_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """An agent's or a trace's answer: the text it returned (bare, or JSON-encoded)."""
    value = _io(attrs, "output") if is_agent(attrs) else None
    if not isinstance(value, str) or value[:1] in ("{", "["):
        return None
    if value.startswith('"'):
        decoded = loads(value)
        value = decoded if isinstance(decoded, str) else value
    return clip_text(value, max_chars)
