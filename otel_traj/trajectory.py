"""Trajectory: the ordered tool calls, model turns, tokens and answer of one agent run (one trace)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from otel_traj.steps import AgentRun, ContextOperation, ModelCall, ToolCall, Unreadable, trace_hex

if TYPE_CHECKING:
    from otel_traj.cost import RunCost


@dataclass(slots=True, frozen=True)
class Tokens:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output


@dataclass(slots=True, frozen=True)
class Trajectory:
    """One graded unit: every GenAI step of one trace, in order, with totals counted once. A value:
    the builder gives its sequences as tuples and nothing changes it once built.

    ``attributes`` holds the raw span attributes that checks need (for example a customer id) with the
    first value seen in the trace. ``complete`` is False when the trace expired before its root ended, was
    evicted for ``max_traces``, or lost steps to ``max_backlog``.
    """

    trace_id: int
    agent: str | None = None
    service_name: str | None = None
    service_version: str | None = None
    conversation_id: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    # Structured-output calls (``final_result``, ``final_answer``): how the framework returned the
    # answer, kept apart from the agent's actions so no check or match counts them.
    output_calls: Sequence[ToolCall] = ()
    model_calls: Sequence[ModelCall] = ()
    agent_runs: Sequence[AgentRun] = ()
    tokens: Tokens = field(default_factory=Tokens)
    start_ns: int = 0
    end_ns: int = 0
    user_input: str | None = None
    final_answer: str | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    complete: bool = True
    root_span_id: int | None = None
    errors: Sequence[str] = ()
    # What the caps dropped for this trace (steps beyond the cap, truncated arguments/results).
    dropped_steps: int = 0
    # Steps dropped unread because the worker was behind (``max_backlog``): the grader reports them
    # (``dropped_steps``) and the run is incomplete.
    backlog_steps: int = 0
    # Spans with GenAI evidence that could not be read into a step: the run cannot be verified.
    unreadable: Sequence[Unreadable] = ()
    # Retrieval and memory searches, in start order: what they returned is context a later argument
    # may come from (``grounded``, ``relations``, ``injection``). Not tool calls: no budget, order
    # rule or tool count sees them.
    context_reads: Sequence[ContextOperation] = ()
    # Memory writes (``create_memory``, ``update_memory`` ...), in start order: side effects a
    # policy names as ``memory:<operation>``.
    memory_writes: Sequence[ContextOperation] = ()
    # Per tool, the parameters JSON Schema the model was offered (``gen_ai.tool.definitions``), as
    # the first request that defines the tool gives it.
    tool_definitions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Priced once, when first read, by ``otel_traj.cost.run_cost`` (a memo: the price of the steps).
    cost: RunCost | None = field(default=None, compare=False, repr=False)

    @property
    def trace_hex(self) -> str:
        return trace_hex(self.trace_id)

    @property
    def model_turns(self) -> int:
        return len(self.model_calls)

    @property
    def duration_s(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e9

    @property
    def arguments_captured(self) -> bool:
        """True when at least one observed tool call recorded its arguments (content capture on)."""
        return any(t.arguments_captured for t in self.tool_calls if t.observed)

    @property
    def agent_label(self) -> str:
        return self.agent or self.service_name or "unknown"
