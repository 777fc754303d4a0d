"""Turn the steps of one trace into a Trajectory: order, parallelism, de-duplication, token totals.

Runs on the worker thread (or offline), never on the application's hot path, so this is where the
expensive normalisation happens: JSON parsing of arguments, nested-span de-duplication, recovery of
tool calls that only the model's output shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import chain
from typing import Any

from otel_traj.dialects._base import parse_json
from otel_traj.records import TraceContext, nonempty_str
from otel_traj.steps import AgentRun, ModelCall, RequestedTool, Step, ToolCall, span_hex
from otel_traj.trajectory import Tokens, Trajectory

CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id", "langfuse.session.id")
_MS = 1_000_000


def parse_arguments(text: str) -> dict[str, Any] | None:
    """The arguments as a dict when the text is a JSON object; None otherwise (kept as text)."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    value = parse_json(stripped)
    return value if isinstance(value, dict) else None


def normalize_arguments(call: ToolCall) -> None:
    """``arguments`` from the text when it is a JSON object, the text then dropped. Idempotent: the
    live checks call it on a run in flight, the builder on every call."""
    if call.arguments is None and call.arguments_text is not None:
        call.arguments = parse_arguments(call.arguments_text)
        if call.arguments is not None:
            call.arguments_text = None


def attribute_conversation_id(attributes: Mapping[str, Any]) -> str | None:
    """The conversation id among a trace's captured attributes (agent spans may name their own)."""
    return _first(nonempty_str(attributes.get(k)) for k in CONVERSATION_KEYS)


def _contains(outer: ToolCall | ModelCall | AgentRun, inner: ToolCall | ModelCall | AgentRun) -> bool:
    return outer.start_ns <= inner.start_ns and inner.end_ns <= outer.end_ns and outer is not inner


def _dedupe_tools(calls: list[ToolCall]) -> list[ToolCall]:
    """Drop tool spans nested in a tool span of the same name: one execution seen by two layers."""
    kept: list[ToolCall] = []
    for call in calls:
        outer = next(
            (
                k
                for k in kept
                if k.name == call.name
                and _contains(k, call)
                and (k.call_id is None or call.call_id is None or k.call_id == call.call_id)
            ),
            None,
        )
        if outer is None:
            kept.append(call)
            continue
        # Keep the outer span's identity and times; take what only the inner layer recorded.
        if not outer.arguments_captured:
            outer.arguments, outer.arguments_text = call.arguments, call.arguments_text
        outer.result = outer.result if outer.result is not None else call.result
        outer.call_id = outer.call_id or call.call_id
        if not call.ok and outer.ok:
            outer.ok, outer.error_type, outer.error_message = False, call.error_type, call.error_message
    return kept


def _merge_model(outer: ModelCall, inner: ModelCall) -> None:
    if inner.has_usage:
        outer.input_tokens, outer.output_tokens = inner.input_tokens, inner.output_tokens
        outer.cache_read_tokens, outer.cache_write_tokens = inner.cache_read_tokens, inner.cache_write_tokens
        outer.reasoning_tokens = inner.reasoning_tokens
    outer.model = inner.model or outer.model
    outer.provider = inner.provider or outer.provider
    outer.finish_reasons = inner.finish_reasons or outer.finish_reasons
    outer.requested_tools = inner.requested_tools or outer.requested_tools
    outer.input_text = inner.input_text or outer.input_text
    outer.output_text = inner.output_text or outer.output_text
    if not inner.ok:
        outer.ok, outer.error_type = False, inner.error_type


def _dedupe_models(calls: list[ModelCall]) -> list[ModelCall]:
    """Nested LLM spans of one model call (e.g. ``call_llm`` ⊃ ``generate_content`` ⊃ ``chat``) count
    once. Calls are sorted by start, so an enclosing call always comes first."""
    kept: list[ModelCall] = []
    for call in calls:
        outer = next((k for k in reversed(kept) if _contains(k, call)), None)
        if outer is None:
            kept.append(call)
        else:
            _merge_model(outer, call)
    return kept


def _start_uncertainty(start_ns: int) -> int:
    """How much later a span may really have started than it says. Some SDKs stamp starts to the
    millisecond and measure durations finely (the OpenTelemetry JavaScript SDK reads ``Date.now()``):
    a call that started in the millisecond the previous one ended may not have overlapped it."""
    return _MS if start_ns % _MS == 0 else 0


def _mark_parallel(calls: list[ToolCall]) -> None:
    for i, call in enumerate(calls):
        latest_start = call.start_ns + _start_uncertainty(call.start_ns)
        for prev in calls[:i]:
            # Overlapping calls where neither contains the other run side by side. Their parents may
            # differ: LangGraph wraps every call of one step in its own ``tools`` chain span.
            overlap = prev.observed and call.observed and prev.end_ns > latest_start
            if overlap and not _contains(prev, call):
                prev.parallel = call.parallel = True


def _recover_requested(models: list[ModelCall], tools: list[ToolCall]) -> list[ToolCall]:
    """Tool calls the model asked for that no tool span shows (the framework traces model calls only,
    or the call never ran): kept as requested-not-observed.

    A request matches an executed call by call id, else (many dialects record no id on tool spans, or
    only on success) by name: the first unmatched call of that name that started after the request.
    """
    requested_ids = {r.call_id for m in models for r in m.requested_tools if r.call_id}
    by_id = {t.call_id: t for t in tools if t.call_id}
    matched: set[int] = set()
    recovered: list[ToolCall] = []
    for model in models:
        for i, req in enumerate(model.requested_tools):
            hit = by_id.get(req.call_id) if req.call_id else None
            if hit is None:
                hit = next(
                    (
                        t
                        for t in tools
                        if id(t) not in matched
                        and t.name == req.name
                        and t.start_ns >= model.start_ns
                        and (t.call_id is None or t.call_id not in requested_ids)
                    ),
                    None,
                )
            if hit is None:
                recovered.append(_requested_call(model, i, req))
            else:
                matched.add(id(hit))
    return recovered


def _requested_call(model: ModelCall, index: int, req: RequestedTool) -> ToolCall:
    return ToolCall(
        name=req.name,
        span_id=model.span_id,
        parent_id=model.parent_id,
        start_ns=model.end_ns,
        end_ns=model.end_ns,
        call_id=req.call_id,
        arguments_text=req.arguments_text,
        observed=False,
        dialect=model.dialect,
        step_id=f"{span_hex(model.span_id)}:{index}",
    )


def _outermost_agents(runs: list[AgentRun]) -> list[AgentRun]:
    return [r for r in runs if not any(_contains(o, r) for o in runs)]


def _tokens(models: list[ModelCall], agents: list[AgentRun]) -> Tokens:
    tokens = Tokens()
    with_usage = [m for m in models if m.has_usage]
    if with_usage:
        for m in with_usage:
            tokens.input += m.input_tokens or 0
            tokens.output += m.output_tokens or 0
            tokens.cache_read += m.cache_read_tokens or 0
            tokens.cache_write += m.cache_write_tokens or 0
            tokens.reasoning += m.reasoning_tokens or 0
        return tokens
    # Only the agent span carries usage (aggregated): take the outermost runs, never nested ones.
    for run in _outermost_agents(agents):
        tokens.input += run.input_tokens or 0
        tokens.output += run.output_tokens or 0
    return tokens


def _first(values: Iterable[str | None]) -> str | None:
    return next((v for v in values if v), None)


def build_trajectory(context: TraceContext, steps: Iterable[Step], complete: bool = True) -> Trajectory:
    tools: list[ToolCall] = []
    models: list[ModelCall] = []
    agents: list[AgentRun] = []
    for step in steps:
        if isinstance(step, ToolCall):
            tools.append(step)
        elif isinstance(step, ModelCall):
            models.append(step)
        else:
            agents.append(step)
    order = lambda s: (s.start_ns, s.end_ns, s.span_id)  # noqa: E731
    tools.sort(key=order)
    models.sort(key=order)
    agents.sort(key=order)

    tools = _dedupe_tools(tools)
    models = _dedupe_models(models)
    _mark_parallel(tools)
    tools = sorted(tools + _recover_requested(models, tools), key=order)
    for call in tools:
        if not call.step_id:
            call.step_id = span_hex(call.span_id)
        normalize_arguments(call)

    top = _outermost_agents(agents)
    attrs = context.attributes
    conversation = _first(a.conversation_id for a in agents) or attribute_conversation_id(attrs)
    final_answer = _first(a.output_text for a in top)
    if final_answer is None and models and not models[-1].requested_tools:
        final_answer = models[-1].output_text
    # A generator, not a list: a model call's input is parsed only if it is the one needed.
    user_input = _first(chain((a.input_text for a in top), (m.input_text for m in models)))

    all_steps: list[ToolCall | ModelCall | AgentRun] = [*tools, *models, *agents]
    starts = [s.start_ns for s in all_steps if s.start_ns]
    ends = [s.end_ns for s in all_steps if s.end_ns]
    start_ns = context.root_start_ns or min(starts, default=context.start_ns)
    end_ns = context.root_end_ns or max(ends, default=context.end_ns)

    errors = [f"{t.name}: {t.error_message or t.error_type or 'error'}" for t in tools if not t.ok]
    errors += [f"model {m.model or '?'}: {m.error_type or 'error'}" for m in models if not m.ok]
    return Trajectory(
        trace_id=context.trace_id,
        agent=_first(a.agent_name for a in agents),
        service_name=context.service_name,
        service_version=context.service_version,
        conversation_id=conversation,
        tool_calls=tools,
        model_calls=models,
        agent_runs=agents,
        tokens=_tokens(models, agents),
        start_ns=start_ns,
        end_ns=end_ns,
        user_input=user_input,
        final_answer=final_answer,
        attributes=dict(attrs),
        complete=complete,
        root_span_id=context.root_span_id,
        errors=errors,
        dropped_steps=context.dropped_steps,
    )
