"""Tool executions joined to the model's requests for them.

A tool span says what ran; the model's response says what was asked for, with the call id and the
arguments the model wrote. Joining the two (by call id, else by name and order in the requesting
turn) gives each execution its turn and the arguments its span lacks or records as a bare value; a
request no span shows becomes a call of its own (``observed=False``); the next request's tool
results and failure flags fill what the executions did not record.

A tool span that names no tool but is read as a part of a call (Claude Code's execution span inside
its tool span) joins the call of its call id that encloses it: its failure and result are the call's.

Steps are values: every function here returns the calls it joins as new ones and leaves the steps it
was given as they were (the live checks join the same steps of a run in flight).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from otel_traj.dialects._base import dumps, parse_json
from otel_traj.steps import ModelCall, RequestedTool, ToolCall, Unreadable, span_hex


def parse_arguments(text: str) -> dict[str, Any] | None:
    """The arguments as a dict when the text is a JSON object; None otherwise (kept as text)."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    value = parse_json(stripped)
    return value if isinstance(value, dict) else None


def _parsed(call: ToolCall) -> tuple[dict[str, Any] | None, str | None]:
    """``(arguments, arguments_text)``: the arguments from the text when it is a JSON object, the
    text then dropped."""
    if call.arguments is None and call.arguments_text is not None:
        arguments = parse_arguments(call.arguments_text)
        if arguments is not None:
            return arguments, None
    return call.arguments, call.arguments_text


def normalized(call: ToolCall) -> ToolCall:
    """The call with ``arguments`` parsed from the text when it is a JSON object (the text dropped);
    the call itself when there is nothing to parse."""
    arguments, text = _parsed(call)
    return call if arguments is call.arguments else replace(call, arguments=arguments, arguments_text=text)


def parts_joined(calls: list[ToolCall]) -> tuple[list[ToolCall], list[Unreadable]]:
    """The named calls, each with what its nameless parts recorded (a part joins the call of its call
    id that is its parent or encloses it); a part no call takes in is unreadable (no source names
    its tool)."""
    named = [call for call in calls if call.name]
    if len(named) == len(calls):
        return calls, []
    by_id: dict[str, list[int]] = {}
    for at, call in enumerate(named):
        if call.call_id:
            by_id.setdefault(call.call_id, []).append(at)
    left: list[Unreadable] = []
    for part in calls:
        if part.name:
            continue
        holder = next((i for i in by_id.get(part.call_id or "", ()) if _holds(named[i], part)), None)
        if holder is None:
            left.append(_unnamed(part))
        else:
            named[holder] = _with_part(named[holder], part)
    return named, left


def _holds(call: ToolCall, part: ToolCall) -> bool:
    inside = call.start_ns <= part.start_ns and part.end_ns <= call.end_ns
    return part.parent_id == call.span_id or inside


def _with_part(call: ToolCall, part: ToolCall) -> ToolCall:
    changes: dict[str, Any] = {}
    if call.result is None and part.result is not None:
        changes["result"] = part.result
    if call.ok and not part.ok:
        changes.update(ok=False, error_type=part.error_type, error_message=part.error_message)
    return replace(call, **changes) if changes else call


def _unnamed(part: ToolCall) -> Unreadable:
    return Unreadable(
        span_id=part.span_id,
        parent_id=part.parent_id,
        start_ns=part.start_ns,
        end_ns=part.end_ns,
        expected="tool",
        field="tool name",
        reason="a part of a call, and no tool span of its call id holds it",
        dialect=part.dialect,
    )


def _wrapped(arguments: dict[str, Any], requested: dict[str, Any]) -> bool:
    """Whether the execution's arguments are a framework's wrapper around the requested ones
    (``{"args": [], "kwargs": {...}, ...}``)."""
    return arguments != requested and any(value == requested for value in arguments.values())


def take_request(call: ToolCall, turn: int, request: RequestedTool) -> ToolCall:
    """An executed call joined to the model's request for it (its arguments parsed, as
    ``normalized``'s): the turn, the request's call id, and the requested arguments when the span
    recorded none, a bare value or a wrapper around them.

    A call joined by name whose span had an id of its own keeps the request's: no request knew the
    span's id, so it is the framework's (an instrumentation may record its framework's run id), not
    the one the model's request and the result sent back use."""
    arguments, text = _parsed(call)
    source = call.arguments_source
    requested = parse_arguments(request.arguments_text) if request.arguments_text else None
    if requested is not None and (arguments is None or _wrapped(arguments, requested)):
        arguments, text, source = requested, None, "request"
    # Every field named, not ``dataclasses.replace``: it reads the class's fields anew on each call,
    # a third of the cost of joining a call, and nearly every executed call is joined
    # (``test_builder_join`` holds that a join keeps every field it does not set).
    return ToolCall(
        name=call.name,
        span_id=call.span_id,
        parent_id=call.parent_id,
        start_ns=call.start_ns,
        end_ns=call.end_ns,
        call_id=request.call_id or call.call_id,
        arguments=arguments,
        arguments_text=text,
        result=call.result,
        ok=call.ok,
        error_type=call.error_type,
        error_message=call.error_message,
        observed=call.observed,
        parallel=call.parallel,
        dialect=call.dialect,
        step_id=call.step_id,
        truncated=call.truncated,
        turn=turn,
        arguments_source=source,
        output=call.output,
        served=call.served,
    )


# A request: the span id of the model call that made it and its index among that call's requests
# (stable while a run's model calls arrive, unlike the turn).
RequestKey = tuple[int, int]


class Requests:
    """The calls a run's model calls requested, indexed once by call id and by name (in request order),
    so joining every executed call costs a lookup each, not a scan of every request. ``taken``: the
    requests already joined to an execution (the live check carries it from one batch to the next)."""

    def __init__(self, models: Sequence[ModelCall], taken: set[RequestKey] | None = None) -> None:
        self.models = models
        self.taken: set[RequestKey] = taken if taken is not None else set()
        self._found: dict[RequestKey, tuple[int, RequestedTool]] = {}
        self._by_id: dict[str, list[RequestKey]] = {}
        self._by_name: dict[str, list[RequestKey]] = {}
        for turn, model in enumerate(models):
            for index, request in enumerate(model.requested_tools):
                key = (model.span_id, index)
                self._found[key] = (turn, request)
                if request.call_id:
                    self._by_id.setdefault(request.call_id, []).append(key)
                self._by_name.setdefault(request.name, []).append(key)
        # Per name, how many of its requests (in order) are known to be taken.
        self._cursor: dict[str, int] = {}

    def find(self, call: ToolCall) -> RequestKey | None:
        """The request an executed call answers, not yet taken: the one with its call id, else (many
        dialects record no id on tool spans, or only on success) the first request of its name, if
        its model call started before the call."""
        if call.call_id and call.call_id in self._by_id:
            return next((key for key in self._by_id[call.call_id] if key not in self.taken), None)
        keys = self._by_name.get(call.name, ())
        cursor = self._cursor.get(call.name, 0)
        while cursor < len(keys) and keys[cursor] in self.taken:
            cursor += 1
        self._cursor[call.name] = cursor
        if cursor == len(keys) or self.models[self._found[keys[cursor]][0]].start_ns > call.start_ns:
            return None
        return keys[cursor]

    def take(self, call: ToolCall, key: RequestKey) -> ToolCall:
        """The call joined to the request ``key``, which is taken from now on."""
        self.taken.add(key)
        turn, request = self._found[key]
        return take_request(call, turn, request)

    def untaken(self) -> list[tuple[int, int, RequestedTool]]:
        """``(turn, index, request)`` of the requests no execution answered, in request order."""
        return [
            (turn, key[1], request) for key, (turn, request) in self._found.items() if key not in self.taken
        ]


def join_requests(
    models: Sequence[ModelCall], tools: Sequence[ToolCall]
) -> tuple[list[ToolCall], list[ToolCall]]:
    """``(executed, requested)``: every executed call (in start order) joined to the model's request
    for it (or, for a call no request shows, only its arguments parsed), in the same order; and the
    requests no execution shows (the framework traces model calls only, or the call never ran) as
    requested-not-observed calls. Each call is built once, with everything the join gives it."""
    requests = Requests(models)
    executed = []
    for call in tools:
        key = requests.find(call)
        executed.append(normalized(call) if key is None else requests.take(call, key))
    requested = [
        _requested_call(models[turn], turn, index, request) for turn, index, request in requests.untaken()
    ]
    return executed, requested


# What identifies a response's calls when it has no ids: their names and arguments, in order.
CallsKey = tuple[tuple[str, str | None], ...]


def _calls_key(calls: tuple[RequestedTool, ...]) -> CallsKey:
    def arguments(text: str | None) -> str | None:
        parsed = parse_arguments(text) if text else None
        return dumps(sorted(parsed.items())) if parsed is not None else text

    return tuple((call.name, arguments(call.arguments_text)) for call in calls)


def requests_from_spans(
    models: list[ModelCall], tools: list[ToolCall]
) -> tuple[list[ModelCall], list[ToolCall]]:
    """``(models, tools)``: the calls a response requested, where the instrumentation records each as
    a span of its own under the model call's (``ToolCall.requested``), become that call's requested
    tools, in order; the other calls are returned. A request whose model call is not among the steps
    stays a requested call."""
    if all(call.observed for call in tools):
        return models, tools
    by_span = {model.span_id: index for index, model in enumerate(models)}
    added: dict[int, list[RequestedTool]] = {}
    kept: list[ToolCall] = []
    for call in tools:
        index = None if call.observed or call.parent_id is None else by_span.get(call.parent_id)
        if index is None:
            kept.append(call)
            continue
        arguments = call.arguments_text if call.arguments is None else dumps(call.arguments)
        request = RequestedTool(name=call.name, call_id=call.call_id, arguments_text=arguments)
        added.setdefault(index, []).append(request)
    models = [
        replace(model, requested_tools=(*model.requested_tools, *added[index])) if index in added else model
        for index, model in enumerate(models)
    ]
    return models, kept


def ids_from_resent_calls(models: list[ModelCall]) -> list[ModelCall]:
    """The model calls, where a response recorded without its calls' ids takes them from the first
    later request that repeats it (the assistant message a loop sends back before the results): the
    same calls, names and arguments in order. The results sent back name the calls by those ids only."""
    if all(all(call.call_id for call in model.requested_tools) for model in models):
        return models  # every response has its ids: the requests need not be read
    resent: dict[CallsKey, list[tuple[int, tuple[RequestedTool, ...]]]] = {}
    for index, model in enumerate(models):
        calls = model.resent()
        if calls and all(call.call_id for call in calls):
            resent.setdefault(_calls_key(calls), []).append((index, calls))
    if not resent:
        return models
    return [_with_resent_ids(model, index, resent) for index, model in enumerate(models)]


def _with_resent_ids(
    model: ModelCall, index: int, resent: dict[CallsKey, list[tuple[int, tuple[RequestedTool, ...]]]]
) -> ModelCall:
    if not model.requested_tools or all(call.call_id for call in model.requested_tools):
        return model
    later = resent.get(_calls_key(model.requested_tools), [])
    found = next((calls for at, calls in later if at > index), None)
    if found is None:
        return model
    requested = tuple(
        call if call.call_id else replace(call, call_id=again.call_id)
        for call, again in zip(model.requested_tools, found, strict=True)
    )
    return replace(model, requested_tools=requested)


def results_from_requests(models: Sequence[ModelCall], tools: list[ToolCall]) -> list[ToolCall]:
    """The calls, where one whose span records no result (or that no span shows) takes the result
    the next model request sent back for its call id.

    An id may answer several calls of a run: an instrumentation may make up ``<name>_<index>`` for
    calls the model gave no id, so the same call in two turns has the same id. A request's results
    answer the latest call of that id begun before it (the previous response's), not the first."""
    missing: dict[str, list[int]] = {}
    for at, t in enumerate(tools):  # in start order
        if t.result is None and t.call_id:
            missing.setdefault(t.call_id, []).append(at)
    if not missing:
        return tools
    answered = list(tools)
    for model in models:
        for call_id, result in model.tool_results:
            waiting = missing.get(call_id, [])
            latest = max(
                (i for i, at in enumerate(waiting) if tools[at].start_ns <= model.start_ns), default=None
            )
            if latest is not None:
                at = waiting.pop(latest)
                answered[at] = _with_result(tools[at], result, call_id in model.failed_results)
    return answered


def _with_result(call: ToolCall, sent: str, failed: bool) -> ToolCall:
    """The call with the result a request sent back. A call the request sends back as a failure
    (``ModelCall.failed_results``) failed, with what was sent as its error, when no span shows its
    outcome: a span that does has the final word."""
    if failed and not call.observed:
        return replace(call, result=sent, ok=False, error_message=sent)
    return replace(call, result=sent)


def _requested_call(model: ModelCall, turn: int, index: int, req: RequestedTool) -> ToolCall:
    arguments = parse_arguments(req.arguments_text) if req.arguments_text else None
    return ToolCall(
        name=req.name,
        span_id=model.span_id,
        parent_id=model.parent_id,
        start_ns=model.end_ns,
        end_ns=model.end_ns,
        call_id=req.call_id,
        arguments=arguments,
        arguments_text=req.arguments_text if arguments is None else None,
        observed=False,
        dialect=model.dialect,
        step_id=f"{span_hex(model.span_id)}:{index}",
        turn=turn,
        arguments_source="request",
    )
