"""CPU cost of the worker thread: ``to_step`` per span and grading per check, on real recordings.

The worker shares the host application's GIL (and caps the receiver's throughput), so every
microsecond it spends per span or per trajectory is taken from somebody. Inputs are the recordings in
``tests/fixtures/real/<framework>/*.otlp.pb`` (clean and violating runs of the support scenario):

- ``to_step``: every span of a framework's files, decoded once with ``read_trace_file``; reported as
  median microseconds per span over the rounds, and spans per second;
- grading: the trajectories of those files with ``examples/policies/support_agent.yaml``; each planned
  check is timed on its own as ``Grader.grade`` calls it (the checks that compare argument keys get
  them precomputed, and ``args_keys`` is timed as its own row), then the whole ``Grader.grade``
  (checks, classification, score, Verdict), run by run and all at once (``Grader.grade_all``, check by
  check, as the worker grades a tick's runs);
- the worker's tick with 10,000 runs in flight and none ready (long agent runs), against the tick
  with one run in flight: what a tick costs must not grow with the runs it leaves alone.

    python benchmarks/worker.py [--rounds R] [--json]
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from otel_traj.adapters import read_trace_file
from otel_traj.assembler import Assembler
from otel_traj.checks.base import CallKeys, args_keys
from otel_traj.config import AssemblerConfig
from otel_traj.dialects import to_step
from otel_traj.grader import Grader, plan_checks
from otel_traj.offline import trajectories_from_views
from otel_traj.policy import load_policy
from otel_traj.spanview import SpanView
from otel_traj.trajectory import Trajectory

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"


def _per_item_us(work: Callable[[], Any], items: int, rounds: int, repeat: int) -> float:
    """Median over ``rounds`` of the microseconds per item of ``repeat`` passes of ``work``."""
    samples = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            start = time.perf_counter_ns()
            for _ in range(repeat):
                work()
            samples.append((time.perf_counter_ns() - start) / 1000 / (items * repeat))
    finally:
        gc.enable()
    return statistics.median(samples)


def _convert(views: list[SpanView]) -> None:
    for view in views:
        to_step(view)


def bench_to_step(rounds: int) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    for framework in sorted(p.name for p in REAL.iterdir() if any(p.glob("*.otlp.pb"))):
        views = [
            v for path in sorted((REAL / framework).glob("*.otlp.pb")) for v in read_trace_file(path).views
        ]
        us = _per_item_us(partial(_convert, views), len(views), rounds, repeat=200)
        results[framework] = {"spans": len(views), "us_per_span": us, "spans_per_s": 1e6 / us}
    return results


def _each_run(check: Callable[[Trajectory], Any], trajectories: list[Trajectory]) -> None:
    for trajectory in trajectories:
        check(trajectory)


def _keyed_run(check: Callable[..., Any], trajectories: list[Trajectory], keys: Sequence[CallKeys]) -> None:
    for trajectory, trajectory_keys in zip(trajectories, keys, strict=True):
        check(trajectory, keys=trajectory_keys)


def _keys_all(trajectories: list[Trajectory]) -> None:
    for trajectory in trajectories:
        args_keys(trajectory.tool_calls)


def bench_grading(rounds: int) -> dict[str, float]:
    # The runs whose agent span names the agent (one framework records none): one policy grades them.
    trajectories = [
        trajectory
        for path in sorted(REAL.glob("*/*.otlp.pb"))
        for trajectory in trajectories_from_views(read_trace_file(path).views)
        if trajectory.agent == "support_agent"
    ]
    policy = load_policy(POLICY)
    grader = Grader(policy)
    agent_policies = {id(p): p for p in (policy.resolve(t) for t in trajectories)}
    [agent_policy] = agent_policies.values()
    keys = [args_keys(t.tool_calls) for t in trajectories]
    count = len(trajectories)
    results: dict[str, float] = {"trajectories": count}
    results["args_keys"] = _per_item_us(partial(_keys_all, trajectories), count, rounds, 500)
    for check in plan_checks(agent_policy):
        name = check.func.__name__.removeprefix("check_")
        if "keys" in inspect.signature(check.func).parameters:
            work = partial(_keyed_run, check, trajectories, keys)
        else:
            work = partial(_each_run, check, trajectories)
        results[name] = _per_item_us(work, count, rounds, 500)
    results["grade"] = _per_item_us(
        partial(_each_run, grader.grade, trajectories), len(trajectories), rounds, 500
    )
    # All of them in one call, check by check, as the worker grades a tick's runs.
    results["grade_all"] = _per_item_us(partial(grader.grade_all, trajectories), count, rounds, 500)
    return results


def _idle_tick_us(in_flight: int, ticks: int = 200) -> float:
    """Microseconds per ``pop_ready`` with ``in_flight`` runs whose root has not arrived."""
    assembler = Assembler(config=AssemblerConfig(max_traces=in_flight + 1, ttl_s=3600.0))
    # A child span of each run: its parent, the root, has not arrived.
    child = SpanView(trace_id=0, span_id=1, parent_id=2, name="lookup", start_ns=1, end_ns=2)
    assembler.add_all([assembler.make_record(replace(child, trace_id=t)) for t in range(1, in_flight + 1)])
    started = time.perf_counter()
    for _ in range(ticks):
        assembler.pop_ready()
    return (time.perf_counter() - started) / ticks * 1e6


def bench_tick() -> dict[str, float]:
    return {"one_in_flight_us": _idle_tick_us(1), "10000_in_flight_us": _idle_tick_us(10_000)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()
    spans = bench_to_step(args.rounds)
    grading = bench_grading(args.rounds)
    tick = bench_tick()
    if args.json:
        print(json.dumps({"to_step": spans, "grading": grading, "tick": tick}, indent=2))
        return
    print("to_step, per span (median of rounds)")
    for framework, row in spans.items():
        print(
            f"  {framework:26} {row['spans']:4.0f} spans  {row['us_per_span']:6.2f} µs/span"
            f"  {row['spans_per_s']:10,.0f} spans/s"
        )
    mean = statistics.mean(row["us_per_span"] for row in spans.values())
    print(f"  {'mean of frameworks':26} {'':10} {mean:6.2f} µs/span  {1e6 / mean:10,.0f} spans/s")
    print(f"\ngrading, per trajectory ({grading['trajectories']:.0f} trajectories, support_agent.yaml)")
    not_checks = ("trajectories", "grade", "grade_all")
    for name, us in grading.items():
        if name not in not_checks:
            print(f"  {name:26} {us:6.2f} µs")
    checks = sum(us for name, us in grading.items() if name not in not_checks)
    print(f"  {'sum of the above':26} {checks:6.2f} µs")
    print(f"  {'Grader.grade':26} {grading['grade']:6.2f} µs  {1e6 / grading['grade']:10,.0f} trajectories/s")
    per_run = grading["grade_all"]
    print(f"  {'Grader.grade_all, per run':26} {per_run:6.2f} µs  {1e6 / per_run:10,.0f} trajectories/s")
    print("\nworker tick, nothing ready")
    print(f"  {'1 run in flight':26} {tick['one_in_flight_us']:6.2f} µs")
    print(f"  {'10,000 runs in flight':26} {tick['10000_in_flight_us']:6.2f} µs")


if __name__ == "__main__":
    main()
