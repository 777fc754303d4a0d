"""What a run read back from a backend lost in storage, found in the run itself.

Langfuse keeps times to the millisecond. Tool calls that started in the same millisecond (calls the
model asked for together, run in parallel) come back in an order no stored time decides. When they
answer one model turn, the turn's request says their order (the order the model asked for them,
which a framework starts them in): they are put in that order. Otherwise, when they differ (not the
same name and arguments), the order is not known: a problem, and the run is not fully read.

Langfuse deletes a model span's structured messages (``llm.input_messages.*``,
``llm.output_messages.*``) when it keeps ``input.value``. The tool calls a model requested are read
from those messages; a run whose tool calls lack arguments, or that has none, cannot be told apart
from one whose calls were lost: it is not fully read.

A Langfuse server that writes observations to its events table (``processToEvent``, the table newer
servers read observations from) keeps none of a span's attributes, only the typed fields it derived
from them (type, name, input, output, model, usage, level). What a dialect reads from the attributes
(operations, tool call ids, the requested calls of a model turn, token kinds, a framework's own
keys) is not there: a run with such an observation is not fully read.

Langfuse keeps no span events but the per-message ones it moves into an observation's input and
output. A span whose dialect records something in its span events only
(``dialects.declarations.recorded_in_events``: a framework's model calls or model messages) read
without any event lost it: the run is not fully read.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from otel_traj.dialects.declarations import recorded_in_events

if TYPE_CHECKING:
    from otel_traj.spanview import SpanView
    from otel_traj.steps import ToolCall
    from otel_traj.trajectory import Trajectory


def _same(calls: list[ToolCall]) -> bool:
    first = calls[0]
    return all(c.name == first.name and c.arguments == first.arguments for c in calls[1:])


def _requested_order(run: Trajectory, calls: list[ToolCall]) -> list[ToolCall] | None:
    """The calls in the order their one requesting turn asked for them, or None when unknown."""
    turns = {call.turn for call in calls}
    if len(turns) != 1 or None in turns:
        return None
    (turn,) = turns
    if turn is None or not 0 <= turn < len(run.model_calls):
        return None
    requested = list(run.model_calls[turn].requested_tools)
    positions: dict[int, int] = {}
    for call in calls:
        at = next(
            (
                i
                for i, r in enumerate(requested)
                if i not in positions.values()
                and (r.call_id == call.call_id if call.call_id and r.call_id else r.name == call.name)
            ),
            None,
        )
        if at is None:
            return None
        positions[id(call)] = at
    return sorted(calls, key=lambda call: positions[id(call)])


def settle_ties(run: Trajectory) -> tuple[Trajectory, list[str]]:
    """The run with its same-millisecond tool calls in their requested order, and a problem for
    each group whose order could not be settled."""
    by_start: defaultdict[int, list[ToolCall]] = defaultdict(list)
    for call in run.tool_calls:
        if call.observed and call.start_ns:
            by_start[call.start_ns].append(call)
    problems: list[str] = []
    settled: dict[int, ToolCall] = {}
    for calls in by_start.values():
        if len(calls) < 2 or _same(calls):
            continue
        ordered = _requested_order(run, calls)
        if ordered is None:
            names = ", ".join(call.name for call in calls)
            problems.append(
                f"tool calls {names} started in the same millisecond (the backend keeps no finer"
                " time): their order is not known"
            )
            continue
        settled.update({id(old): new for old, new in zip(calls, ordered, strict=True)})
    if not settled:
        return run, problems
    tools = tuple(settled.get(id(call), call) for call in run.tool_calls)
    return replace(run, tool_calls=tools), problems


def message_problems(run: Trajectory, dropped_messages: int) -> list[str]:
    """A problem when model messages Langfuse dropped were what the run's tool calls are read from:
    a tool call without arguments, or no tool call at all beside model calls."""
    if not dropped_messages:
        return []
    unknown = [call.name for call in run.tool_calls if call.observed and call.arguments is None]
    if run.tool_calls and not unknown:
        return []
    what = f"tool calls {', '.join(unknown)} have no arguments" if unknown else "no tool call was read"
    return [
        f"{what}, and Langfuse dropped the messages of {dropped_messages} model observations"
        " (llm.input_messages / llm.output_messages beside input.value): the calls they requested"
        " are not known"
    ]


ATTRIBUTES_NOT_KEPT = "span attributes not kept by this Langfuse server"


def attribute_problems(without_attributes: int) -> list[str]:
    """A problem when observations ingested over OTLP came back without their span's attributes."""
    if not without_attributes:
        return []
    return [
        f"{ATTRIBUTES_NOT_KEPT} ({without_attributes} observations ingested over OpenTelemetry read"
        " from their typed fields only)"
    ]


def event_problems(views: Iterable[SpanView]) -> list[str]:
    """A problem for each thing spans record in span events only, found on spans read without any
    event (Langfuse kept none of them)."""
    lost = Counter(
        what
        for view in views
        if not view.events and (what := recorded_in_events(view.name, view.attributes)) is not None
    )
    return [
        f"{what} are recorded in span events, which Langfuse does not keep ({count} observations read"
        " without them)"
        for what, count in lost.items()
    ]
