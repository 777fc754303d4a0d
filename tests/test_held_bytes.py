"""What runs in flight hold is measured in bytes of memory and bounded per run and in all: a run that
floods pays with its own steps, the service refuses new traces past the budget, and the measure
follows the memory really taken (tracemalloc), whatever the texts are made of."""

from __future__ import annotations

import json
import sys
import tracemalloc
from functools import partial

import pytest

from otel_traj.assembler import Assembler
from otel_traj.config import AssemblerConfig
from otel_traj.held import held_bytes
from otel_traj.records import SpanRecord
from otel_traj.spanview import SpanView
from otel_traj.steps import ToolCall

MAX_CHARS = 4096


def _tool_span(trace_id: int, span_id: int, text: str, parent: int | None = 1) -> SpanView:
    return SpanView(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent,
        name="execute_tool lookup",
        start_ns=span_id,
        end_ns=span_id + 1,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.arguments": json.dumps({"q": text}),
            "gen_ai.tool.call.result": text,
        },
    )


def _records(assembler: Assembler, trace_id: int, steps: int, text: str) -> list[SpanRecord]:
    return [assembler.make_record(_tool_span(trace_id, 10 + i, text)) for i in range(steps)]


def test_held_bytes_counts_texts_as_allocated_and_what_a_deferred_parse_holds() -> None:
    wide = "\U0001f600" * 1000  # 4 bytes a character
    call = ToolCall(name="t", span_id=1, arguments_text=wide)
    assert held_bytes(call) >= sys.getsizeof(wide) > 4000
    history = "x" * 100_000
    assert held_bytes(partial(json.loads, history)) >= sys.getsizeof(history)
    assert held_bytes({"k": ("a", ["b", 3, None])}) > held_bytes({"k": ()})


def test_a_run_that_floods_pays_with_its_own_steps() -> None:
    probe = Assembler(config=AssemblerConfig(max_chars=MAX_CHARS))
    one = probe.make_record(_tool_span(1, 10, "x" * 3000)).held
    assembler = Assembler(config=AssemblerConfig(grace_s=0, max_chars=MAX_CHARS, max_trace_bytes=10 * one))
    assert assembler.add_all(_records(assembler, 1, 50, "x" * 3000))
    assert assembler.add_all(_records(assembler, 2, 5, "x" * 3000))
    assert assembler.stats.snapshot().dropped == {"max_trace_bytes": 40}
    assert assembler.held == 15 * one == assembler.stats.snapshot().held_bytes


def test_past_the_budget_new_traces_are_refused_and_runs_in_flight_go_on() -> None:
    probe = Assembler(config=AssemblerConfig(max_chars=MAX_CHARS))
    one = probe.make_record(_tool_span(1, 10, "y" * 3000)).held
    assembler = Assembler(config=AssemblerConfig(grace_s=0, max_chars=MAX_CHARS, max_held_bytes=5 * one))
    assert assembler.add_all(_records(assembler, 1, 5, "y" * 3000), max_traces=100)
    assert assembler.over_budget
    assert not assembler.add_all(_records(assembler, 2, 1, "y" * 3000), max_traces=100)
    # A run in flight still gets its spans, so that it can finish.
    root = assembler.make_record(
        SpanView(trace_id=1, span_id=1, parent_id=None, name="invoke_agent a", start_ns=1, end_ns=99)
    )
    assert assembler.add_all([root], max_traces=100)
    [finished] = assembler.pop_ready(flush=True)
    assert len(finished.steps) == 6 and assembler.held == 0  # five calls and the agent run
    assert assembler.add_all(_records(assembler, 2, 1, "y" * 3000), max_traces=100)


def test_an_in_process_run_past_the_budget_is_not_kept_and_counted() -> None:
    assembler = Assembler(config=AssemblerConfig(max_chars=MAX_CHARS, max_held_bytes=1))
    assembler.track_starts = True  # in-process: a run cannot be refused
    assert assembler.add_all(_records(assembler, 1, 2, "z" * 3000))
    assert assembler.add_all(_records(assembler, 2, 2, "z" * 3000))
    assert assembler.in_flight == 1
    assert assembler.stats.snapshot().dropped == {"max_held_bytes": 2}


@pytest.mark.parametrize(
    "text", ["a" * 4000, "\U0001f600" * 4000, "é" * 4000], ids=["ascii", "wide", "latin"]
)
def test_the_measure_follows_the_memory_taken(text: str) -> None:
    """Runs held until the budget refuses more take about what ``held`` says, whatever their
    characters: the bound is on memory, not on characters."""
    budget = 8 << 20
    assembler = Assembler(config=AssemblerConfig(grace_s=60, max_chars=MAX_CHARS, max_held_bytes=budget))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        trace_id = 1
        while assembler.add_all(_records(assembler, trace_id, 4, text), max_traces=1_000_000):
            trace_id += 1
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert budget <= assembler.held <= budget + 4 * _records(assembler, 0, 1, text)[0].held
    assert taken <= 1.5 * assembler.held, f"{taken / assembler.held:.2f}x what held says"
