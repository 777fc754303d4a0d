"""Steps: what one span means for a trajectory (a tool call, a model call or an agent run).

Dialect parsers (``otel_traj.dialects``) turn a SpanView into at most one Step. Steps are compact on
purpose: the in-process processor keeps them for every running trace, so they hold strings and numbers
only, never references to SDK objects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

# ``context``: a retrieval or memory operation (``ContextOperation``), no tool, model or agent step.
StepKind = Literal["tool", "model", "agent", "context"]
# Where a tool call's arguments were read: its own execution span, or the model's request for it.
ArgumentsSource = Literal["execution", "request"]


# Text, or how to get it when first read (see ``ModelCall.input_text``).
LazyText = str | Callable[[], str | None] | None


def resolve_text(source: Callable[[], str | None]) -> str | None:
    try:
        return source()
    except Exception:
        # Parsing is the dialects' job and never raises; a deferred parse must not either.
        return None


def span_hex(span_id: int) -> str:
    return f"{span_id:016x}"


def trace_hex(trace_id: int) -> str:
    return f"{trace_id:032x}"


@dataclass(slots=True, frozen=True, kw_only=True)
class ToolCall:
    """One tool execution (or, with ``observed=False``, one the model requested but no span shows)."""

    name: str
    span_id: int
    parent_id: int | None = None
    start_ns: int = 0
    end_ns: int = 0
    call_id: str | None = None
    # Dialects set ``arguments`` when the span holds them as structured data, else ``arguments_text``
    # with the raw text; the trajectory builder parses JSON objects out of the text.
    arguments: dict[str, Any] | None = None
    arguments_text: str | None = None
    result: str | None = None
    ok: bool = True
    error_type: str | None = None
    error_message: str | None = None
    observed: bool = True
    parallel: bool = False
    dialect: str = ""
    step_id: str = ""
    truncated: bool = False
    # Given by the trajectory builder to the call it joins to the model's request: the index of the
    # requesting model call in ``Trajectory.model_calls`` and where the arguments came from.
    turn: int | None = None
    arguments_source: ArgumentsSource = "execution"
    # A structured-output tool (``final_result``, ``final_answer``): the framework's way to return
    # the answer, not an action of the agent; kept out of tool checks and matching.
    output: bool = False
    # Recorded by the server that ran the tool (an MCP server's ``tools/call`` span) in a process,
    # maybe a host, of its own: its clock is not the caller's.
    served: bool = False

    kind: StepKind = field(default="tool", init=False)

    @property
    def arguments_captured(self) -> bool:
        return self.arguments is not None or self.arguments_text is not None


@dataclass(slots=True, frozen=True, kw_only=True)
class RequestedTool:
    """A tool call that a model response asked for (``tool_call`` part of the output messages)."""

    name: str
    call_id: str | None = None
    arguments_text: str | None = None


LazyCalls = tuple[RequestedTool, ...] | Callable[[], tuple[RequestedTool, ...]]


class _LazyInput:
    """``input_text``: the last user message of the request, parsed on first use. Chat spans often
    carry the whole conversation so far, and usually only the first call's message is ever read.

    The parsed text replaces the parse in the (frozen) step: a memo, the value read is the same
    before and after."""

    # The slot itself is the subclass's dataclass field (a mixin with slots must declare none).
    __slots__ = ()
    input_source: LazyText

    @property
    def input_text(self) -> str | None:
        source = self.input_source
        if callable(source):
            source = resolve_text(source)
            object.__setattr__(self, "input_source", source)
        return source


@dataclass(slots=True, frozen=True, kw_only=True)
class ModelCall(_LazyInput):
    span_id: int
    parent_id: int | None = None
    start_ns: int = 0
    end_ns: int = 0
    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    finish_reasons: tuple[str, ...] = ()
    requested_tools: tuple[RequestedTool, ...] = ()
    # ``(call id, result)`` of the tool results the request sent back for the previous response's
    # calls: a call's result where its own span records none.
    tool_results: tuple[tuple[str, str], ...] = ()
    # The previous response's calls as the request repeats them (its last assistant message): their
    # ids where the response's own record has none. Read on first use (``resent``): only a run with a
    # response recorded without ids needs them.
    resent_source: LazyCalls = ()
    # Call ids among them whose results the request sends back as failures (Anthropic's ``is_error``).
    failed_results: tuple[str, ...] = ()
    # The usage recorded is the run's so far, not this call's (a dialect says so): the builder takes
    # the difference from the call before.
    cumulative_usage: bool = False
    # ``(tool name, parameters JSON Schema as JSON text)`` of the tools the request offered
    # (``gen_ai.tool.definitions``), each schema within ``max_chars``.
    tool_definitions: tuple[tuple[str, str], ...] = ()
    input_source: LazyText = None
    output_text: str | None = None
    ok: bool = True
    error_type: str | None = None
    dialect: str = ""

    kind: StepKind = field(default="model", init=False)

    def resent(self) -> tuple[RequestedTool, ...]:
        """The calls the request repeats (``resent_source``), parsed on first use; never raises."""
        source = self.resent_source
        if callable(source):
            try:
                source = source()
            except Exception:
                source = ()
            # A memo, as ``input_text``'s: the calls read are the same before and after.
            object.__setattr__(self, "resent_source", source)
        return source

    @property
    def has_usage(self) -> bool:
        return self.input_tokens is not None or self.output_tokens is not None


@dataclass(slots=True, frozen=True, kw_only=True)
class AgentRun(_LazyInput):
    span_id: int
    parent_id: int | None = None
    start_ns: int = 0
    end_ns: int = 0
    agent_name: str | None = None
    conversation_id: str | None = None
    input_source: LazyText = None
    output_text: str | None = None
    # Usage some frameworks aggregate on the agent span; used only when no model call carries usage.
    input_tokens: int | None = None
    output_tokens: int | None = None
    ok: bool = True
    error_type: str | None = None
    dialect: str = ""
    # A workflow around the agents (``invoke_workflow``, a vendor's workflow or flow kind): its
    # name is the pipeline's, the agent's only when no agent span names one.
    workflow: bool = False

    kind: StepKind = field(default="agent", init=False)


# The conventions' memory operations that change what a memory store holds: side effects.
MEMORY_WRITES = frozenset(
    {"create_memory", "update_memory", "upsert_memory", "delete_memory", "delete_memory_store"}
)
MEMORY_PREFIX = "memory:"
RETRIEVAL_PREFIX = "retrieval:"


@dataclass(slots=True, frozen=True, kw_only=True)
class ContextOperation:
    """A retrieval or memory operation of the run (``gen_ai.operation.name`` ``retrieval``,
    ``search_memory``, ``create_memory`` ...): what it read is context a later argument may come
    from, what it wrote is a side effect. Neither is a tool call: no budget, order rule or tool
    count sees it."""

    operation: str
    span_id: int
    parent_id: int | None = None
    start_ns: int = 0
    end_ns: int = 0
    # The data source or memory store (``gen_ai.data_source.id``, ``gen_ai.memory.store.id``).
    source: str | None = None
    query: str | None = None
    # What the operation returned (documents, memory records) or, for a write, what it stored: as
    # the span records it (JSON text for structured values), cut to ``max_chars``.
    text: str | None = None
    ok: bool = True
    error_type: str | None = None
    dialect: str = ""
    truncated: bool = False

    kind: StepKind = field(default="context", init=False)

    @property
    def writes(self) -> bool:
        return self.operation in MEMORY_WRITES

    @property
    def name(self) -> str:
        """How a policy names it where it names tools: ``memory:<operation>`` for a memory
        operation, ``retrieval:<operation>`` for a retrieval."""
        prefix = RETRIEVAL_PREFIX if self.operation == "retrieval" else MEMORY_PREFIX
        return prefix + self.operation

    @property
    def step_id(self) -> str:
        return span_hex(self.span_id)

    def as_call(self) -> ToolCall:
        """The operation as the checks that compare arguments with earlier results, or look for
        side effects after an instruction, read a call: named ``name``, its text the result."""
        return ToolCall(
            name=self.name,
            span_id=self.span_id,
            parent_id=self.parent_id,
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            result=None if self.writes else self.text,
            arguments_text=self.text if self.writes else None,
            ok=self.ok,
            error_type=self.error_type,
            dialect=self.dialect,
            step_id=self.step_id,
            truncated=self.truncated,
        )


@dataclass(slots=True, frozen=True, kw_only=True)
class Unreadable:
    """A span with GenAI evidence that yields no complete step, or whose reading raised. Kept in the
    run, so that the run says it could not be verified instead of being graded as if the span never
    happened."""

    span_id: int
    parent_id: int | None = None
    start_ns: int = 0
    end_ns: int = 0
    span_name: str = ""
    # What the evidence said the span is; None when reading failed before it could tell.
    expected: StepKind | None = None
    # Which field could not be read (``tool name``, or the evidence source whose reader raised).
    field: str = ""
    reason: str = ""
    dialect: str = ""
    # The span itself could not be decoded (an adapter's ``MalformedSpan``): counted as malformed.
    malformed: bool = False

    @property
    def step_id(self) -> str:
        return span_hex(self.span_id)


Step = ToolCall | ModelCall | AgentRun | ContextOperation | Unreadable
