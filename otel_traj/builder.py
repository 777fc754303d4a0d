"""Turn the steps of one trace into a Trajectory: order, parallelism, de-duplication, token totals.

Runs on the worker thread (or offline), never on the application's hot path, so this is where the
expensive normalisation happens: JSON parsing of arguments, nested-span de-duplication, recovery of
tool calls that only the model's output shows.

Steps are values: each pass returns the steps it changes as new ones (most are built once more, by
the join) and leaves the steps it was given as the run holds them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import chain
from typing import Any, TypeVar

from otel_traj.context_reads import distinct_reads
from otel_traj.dialects._base import dumps, parse_json
from otel_traj.dialects.declarations import CONVERSATION_KEYS, answer_in, is_output_tool
from otel_traj.joins import (
    ids_from_resent_calls,
    join_requests,
    parts_joined,
    requests_from_spans,
    results_from_requests,
)
from otel_traj.records import TraceContext, nonempty_str
from otel_traj.steps import AgentRun, ContextOperation, ModelCall, Step, ToolCall, Unreadable, span_hex
from otel_traj.trajectory import Tokens, Trajectory

_MS = 1_000_000
_Layer = TypeVar("_Layer", ToolCall, ModelCall)


def attribute_conversation_id(attributes: Mapping[str, Any]) -> str | None:
    """The conversation id among a trace's captured attributes (agent spans may name their own)."""
    return _first(nonempty_str(attributes.get(k)) for k in CONVERSATION_KEYS)


def _order(step: Step) -> tuple[int, int, int]:
    return step.start_ns, step.end_ns, step.span_id


def _contains(outer: ToolCall | ModelCall | AgentRun, inner: ToolCall | ModelCall | AgentRun) -> bool:
    return outer.start_ns <= inner.start_ns and inner.end_ns <= outer.end_ns and outer is not inner


def _enclosing_first(step: Step) -> tuple[int, int, int]:
    """Start order, a longer span first among those that started together: times kept to the
    millisecond (a backend's) make a layer and the one it wraps start at once."""
    return step.start_ns, -step.end_ns, step.span_id


def _layers(first: _Layer, then: _Layer) -> tuple[_Layer, _Layer]:
    """(outer, inner) of two spans of one call, ``first`` enclosing ``then`` by their times: when the
    times are the same (kept to the millisecond), the parent is the outer one."""
    return (then, first) if first.parent_id == then.span_id else (first, then)


def _dedupe_tools(calls: list[ToolCall]) -> list[ToolCall]:
    """Drop tool spans nested in a tool span of the same name: one execution seen by two layers. A
    span the tool's server recorded (an MCP server, another process) is one of the caller's calls of
    its name, taken in order: its times are another clock's, so nesting cannot tell which."""
    kept: list[ToolCall] = []
    # Per name, the indices in ``kept`` of the calls not yet ended: calls come in start order, so one
    # that ended before a call started encloses neither it nor any later one (the work stays linear).
    running: dict[str, list[int]] = {}
    for call in sorted(calls, key=_enclosing_first):
        if call.served:
            continue
        same = running.setdefault(call.name, [])
        same[:] = [k for k in same if kept[k].end_ns >= call.start_ns]
        outer = next((k for k in same if _encloses(kept[k], call)), None)
        if outer is None:
            same.append(len(kept))
            kept.append(call)
        else:
            kept[outer] = _merged_tool(*_layers(kept[outer], call))
    callers: dict[str, list[int]] = {}
    for k, call in enumerate(kept):
        callers.setdefault(call.name, []).append(k)
    served: list[ToolCall] = []
    for call in calls:
        if call.served:
            caller = callers.get(call.name)
            if caller:
                k = caller.pop(0)
                kept[k] = _merged_tool(kept[k], call)
            else:
                served.append(call)  # the server's record is all there is of this call
    return sorted(kept + served, key=_order)


def _encloses(outer: ToolCall, call: ToolCall) -> bool:
    ids_agree = outer.call_id is None or call.call_id is None or outer.call_id == call.call_id
    return ids_agree and _contains(outer, call)


def _merged_tool(outer: ToolCall, call: ToolCall) -> ToolCall:
    """The outer span's identity and times, with what only the inner layer recorded."""
    changes: dict[str, Any] = {}
    if not outer.arguments_captured:
        changes.update(arguments=call.arguments, arguments_text=call.arguments_text)
    if outer.result is None:
        changes["result"] = call.result
    if not outer.call_id:
        changes["call_id"] = call.call_id
    if not call.ok and outer.ok:
        changes.update(ok=False, error_type=call.error_type, error_message=call.error_message)
    return replace(outer, **changes) if changes else outer


def _merged_model(outer: ModelCall, inner: ModelCall) -> ModelCall:
    changes: dict[str, Any] = {}
    if inner.has_usage:
        changes.update(
            input_tokens=inner.input_tokens,
            output_tokens=inner.output_tokens,
            cache_read_tokens=inner.cache_read_tokens,
            cache_write_tokens=inner.cache_write_tokens,
            reasoning_tokens=inner.reasoning_tokens,
        )
    if not inner.ok:
        changes.update(ok=False, error_type=inner.error_type)
    return replace(
        outer,
        model=inner.model or outer.model,
        provider=inner.provider or outer.provider,
        finish_reasons=inner.finish_reasons or outer.finish_reasons,
        requested_tools=inner.requested_tools or outer.requested_tools,
        tool_definitions=inner.tool_definitions or outer.tool_definitions,
        input_source=inner.input_text or outer.input_text,
        output_text=inner.output_text or outer.output_text,
        **changes,
    )


def _dedupe_models(calls: list[ModelCall]) -> list[ModelCall]:
    """Nested LLM spans of one model call (e.g. ``call_llm`` ⊃ ``generate_content`` ⊃ ``chat``) count
    once. An enclosing call always comes first (:func:`_enclosing_first`)."""
    kept: list[ModelCall] = []
    running: list[int] = []  # indices in ``kept`` of the calls not yet ended (see ``_dedupe_tools``)
    for call in sorted(calls, key=_enclosing_first):
        running[:] = [k for k in running if kept[k].end_ns >= call.start_ns]
        outer = next((k for k in reversed(running) if _contains(kept[k], call)), None)
        if outer is None:
            running.append(len(kept))
            kept.append(call)
        else:
            kept[outer] = _merged_model(*_layers(kept[outer], call))
    return sorted(kept, key=_order)


def _start_uncertainty(start_ns: int) -> int:
    """How much later a span may really have started than it says. Some SDKs stamp starts to the
    millisecond and measure durations finely (the OpenTelemetry JavaScript SDK reads ``Date.now()``):
    a call that started in the millisecond the previous one ended may not have overlapped it."""
    return _MS if start_ns % _MS == 0 else 0


def _parallel(calls: Sequence[ToolCall]) -> set[int]:
    """The indices of the calls that overlap another (``calls`` in start order)."""
    parallel: set[int] = set()
    running: list[int] = []  # earlier calls not yet ended: only they can overlap this or later ones
    for at, call in enumerate(calls):
        latest_start = call.start_ns + _start_uncertainty(call.start_ns)
        running[:] = [k for k in running if calls[k].end_ns > call.start_ns]
        for k in running:
            prev = calls[k]
            # Overlapping calls run side by side unless one is nested in the other (one execution seen
            # by two layers, or a call made inside another's execution).
            overlap = prev.observed and call.observed and prev.end_ns > latest_start
            if overlap and (not _contains(prev, call) or _side_by_side(prev, call)):
                parallel.update((k, at))
        running.append(at)
    return parallel


def _side_by_side(outer: ToolCall, inner: ToolCall) -> bool:
    """Whether a call whose span lies within another's ran beside it rather than inside it: siblings
    may overlap entirely, under one parent or each under a span of its own (a framework may wrap every
    call of one step in a chain or step span of its own), and
    then one model response requested both. A call made inside another's execution (an agent run as
    a tool) was requested by a response within it."""
    return outer.parent_id == inner.parent_id or (outer.turn is not None and outer.turn == inner.turn)


def _outermost_agents(runs: Sequence[AgentRun]) -> list[AgentRun]:
    return [r for r in runs if not any(_contains(o, r) for o in runs)]


def _per_call_usage(models: list[ModelCall]) -> list[ModelCall]:
    """The model calls, with usage recorded as the run's running total
    (``ModelCall.cumulative_usage``) as each call's own: the difference from the call before, in
    start order."""
    if not any(call.cumulative_usage for call in models):
        return models
    seen_input = seen_output = 0
    own: list[ModelCall] = []
    for call in models:
        if not call.cumulative_usage or not call.has_usage:
            own.append(call)
            continue
        total_input, total_output = call.input_tokens or 0, call.output_tokens or 0
        if total_input >= seen_input and total_output >= seen_output:
            call = replace(
                call, input_tokens=total_input - seen_input, output_tokens=total_output - seen_output
            )
        seen_input, seen_output = max(seen_input, total_input), max(seen_output, total_output)
        own.append(replace(call, cumulative_usage=False))
    return own


def _tokens(models: Sequence[ModelCall], agents: Sequence[AgentRun]) -> Tokens:
    with_usage = [m for m in models if m.has_usage]
    if with_usage:
        return Tokens(
            input=sum(m.input_tokens or 0 for m in with_usage),
            output=sum(m.output_tokens or 0 for m in with_usage),
            cache_read=sum(m.cache_read_tokens or 0 for m in with_usage),
            cache_write=sum(m.cache_write_tokens or 0 for m in with_usage),
            reasoning=sum(m.reasoning_tokens or 0 for m in with_usage),
        )
    # Only the agent span carries usage (aggregated): take the outermost runs, never nested ones.
    top = _outermost_agents(agents)
    return Tokens(input=sum(r.input_tokens or 0 for r in top), output=sum(r.output_tokens or 0 for r in top))


def _first(values: Iterable[str | None]) -> str | None:
    return next((v for v in values if v), None)


def _records_a_call(model: ModelCall) -> bool:
    # A failed call records an error where a successful one records usage: it is a turn too.
    return bool(model.has_usage or model.output_text or model.requested_tools or model.finish_reasons) or (
        model.input_source is not None or not model.ok
    )


def _calls_on_record(models: list[ModelCall]) -> list[ModelCall]:
    """The model spans that record a call: with usage, messages or finish reasons. A span that has
    none while others do prepared a request (a framework's request building) and is no
    call of its own; when no span has any (content and usage off), every span counts."""
    recorded = [m for m in models if _records_a_call(m)]
    return recorded if recorded else models


# An object's repr (``AgentOutput(response=...)``) or a Python dict's: no answer a user was given.
_REPR = re.compile(r"[A-Za-z_][\w.]*\((?:\w+=|\))|\{'|\[\{'|<\w[\w.]* object at 0x")


def _answer_text(text: str | None) -> str | None:
    return None if text is None or _REPR.match(text) else text


def _output_text(call: ToolCall) -> str | None:
    """What a structured-output call returned: its one text argument, else its arguments as JSON."""
    if call.arguments is not None:
        values = list(call.arguments.values())
        if len(values) == 1 and isinstance(values[0], str):
            return values[0]
        return dumps(call.arguments)
    return call.arguments_text


def _final_answer(top: list[AgentRun], models: list[ModelCall], outputs: list[ToolCall]) -> str | None:
    """The answer, from the first of: what the outermost agent or workflow span returned (never an
    object's repr); the text of the last model call, when it asked for no more tools, without a
    framework's scaffold around it (``dialects.declarations.answer_in``); the arguments of the last
    structured-output call."""
    answer = _first(_answer_text(a.output_text) for a in top)
    if answer is None and models:
        last = models[-1]
        if not any(not is_output_tool(r.name) for r in last.requested_tools):
            text = last.output_text
            answer = answer_in(text) if text is not None else None
    if answer is None and outputs:
        answer = _output_text(outputs[-1])
    return answer


def _partition(
    steps: Iterable[Step],
) -> tuple[list[ToolCall], list[ModelCall], list[AgentRun], list[ContextOperation], list[Unreadable]]:
    """The run's steps by kind, each in start order."""
    tools: list[ToolCall] = []
    models: list[ModelCall] = []
    agents: list[AgentRun] = []
    operations: list[ContextOperation] = []
    unreadable: list[Unreadable] = []
    for step in steps:
        if isinstance(step, ToolCall):
            tools.append(step)
        elif isinstance(step, ModelCall):
            models.append(step)
        elif isinstance(step, AgentRun):
            agents.append(step)
        elif isinstance(step, ContextOperation):
            operations.append(step)
        else:
            unreadable.append(step)
    for kind in (tools, models, agents, operations, unreadable):
        kind.sort(key=_order)
    return tools, models, agents, operations, unreadable


def _calls(models: list[ModelCall], tools: list[ToolCall]) -> tuple[list[ModelCall], list[ToolCall]]:
    """The run's model calls, each counted once, and its tool calls, executed and requested, joined
    to each other, in start order."""
    models = _per_call_usage(_calls_on_record(_dedupe_models(models)))
    models, tools = requests_from_spans(models, tools)
    models = ids_from_resent_calls(models)
    executed, requested = join_requests(models, _dedupe_tools(tools))
    tools = sorted(executed + requested, key=_order) if requested else executed
    # After the join: the turn that requested each call tells siblings apart.
    parallel = _parallel(tools)
    tools = results_from_requests(models, tools)
    return models, [_finished_call(call, at in parallel) for at, call in enumerate(tools)]


def _finished_call(call: ToolCall, parallel: bool) -> ToolCall:
    """The call with what only the whole run tells: whether it ran beside another, its step id (a
    call read from a store may have none), whether it is a structured-output call."""
    changes: dict[str, Any] = {}
    if parallel and not call.parallel:
        changes["parallel"] = True
    if not call.step_id:
        changes["step_id"] = span_hex(call.span_id)
    if not call.output and is_output_tool(call.name):
        changes["output"] = True
    return replace(call, **changes) if changes else call


def _tool_definitions(models: Sequence[ModelCall]) -> dict[str, Mapping[str, Any]]:
    """Per tool, the parameters schema of the first request that offers it (parsed once per name)."""
    found: dict[str, Mapping[str, Any]] = {}
    for model in models:
        for name, text in model.tool_definitions:
            if name not in found:
                schema = parse_json(text)
                if isinstance(schema, dict):
                    found[name] = schema
    return found


def build_trajectory(
    context: TraceContext, steps: Iterable[Step], complete: bool = True, backlog_steps: int = 0
) -> Trajectory:
    """The run's trajectory. ``backlog_steps``: steps the assembler dropped unread (``max_backlog``)."""
    tools, models, agents, operations, unreadable = _partition(steps)
    tools, unnamed = parts_joined(tools)
    unreadable = sorted(unreadable + unnamed, key=_order) if unnamed else unreadable
    operations = distinct_reads(operations)
    models, tools = _calls(models, tools)
    outputs = [t for t in tools if t.output]
    tools = [t for t in tools if not t.output]

    top = _outermost_agents(agents)
    attrs = context.attributes
    conversation = _first(a.conversation_id for a in agents) or attribute_conversation_id(attrs)
    # A generator, not a list: a model call's input is parsed only if it is the one needed.
    user_input = _first(chain((a.input_text for a in top), (m.input_text for m in models)))

    all_steps: list[ToolCall | ModelCall | AgentRun] = [*tools, *models, *agents]
    starts = [s.start_ns for s in all_steps if s.start_ns]
    ends = [s.end_ns for s in all_steps if s.end_ns]
    errors = [f"{t.name}: {t.error_message or t.error_type or 'error'}" for t in tools if not t.ok]
    errors += [f"model {m.model or '?'}: {m.error_type or 'error'}" for m in models if not m.ok]
    return Trajectory(
        trace_id=context.trace_id,
        agent=_first(a.agent_name for a in agents if not a.workflow) or _first(a.agent_name for a in agents),
        service_name=context.service_name,
        service_version=context.service_version,
        conversation_id=conversation,
        tool_calls=tuple(tools),
        output_calls=tuple(outputs),
        model_calls=tuple(models),
        agent_runs=tuple(agents),
        tokens=_tokens(models, agents),
        start_ns=context.root_start_ns or min(starts, default=context.start_ns),
        end_ns=context.root_end_ns or max(ends, default=context.end_ns),
        user_input=user_input,
        final_answer=_final_answer(top, models, outputs),
        attributes=dict(attrs),
        complete=complete,
        root_span_id=context.root_span_id,
        errors=tuple(errors),
        dropped_steps=context.dropped_steps,
        backlog_steps=backlog_steps,
        unreadable=tuple(unreadable),
        context_reads=tuple(op for op in operations if not op.writes),
        memory_writes=tuple(op for op in operations if op.writes),
        tool_definitions=_tool_definitions(models),
    )
