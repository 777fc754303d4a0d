"""Cost of grading a trajectory with the full example policy vs. the cost of assembling it.

Spans of a support-agent run are recorded once with the real OpenTelemetry SDK (GenAI semantic
conventions; each chat span carries the conversation so far, as instrumentations record it). Then,
in the same process and in alternating rounds:

- assemble: SpanViews -> assembler -> dialects -> builder -> Trajectory (``trajectories_from_views``);
- grade: ``Grader(policy).grade(trajectory)`` with ``examples/policies/support_agent.yaml``;
- export: ``PrometheusSink().export(verdict)``, the metrics update each graded run costs.

Reported per size (10 and 100 tool steps): median microseconds per trajectory and trajectories per
second for each, and grade/assemble. Target: grading a 10-step trajectory costs less than assembling it.

Then the worst time to grade one run of 1, 10, 100 and 1,000 tool steps with ~2 KB results each
(invoices full of digit runs, payment checks of ids those results hold, every tenth one made up:
the shape that made ``grounded`` quadratic), built directly as trajectories. Target: time grows
about linearly (each ratio close to the ratio of the sizes).

    python benchmarks/grading.py [--rounds R] [--sizes 10,100] [--large-sizes 1,10,100,1000] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from otel_traj.adapters import from_readable_span
from otel_traj.grader import Grader
from otel_traj.offline import trajectories_from_views
from otel_traj.policy import load_policy
from otel_traj.sinks.prometheus import PrometheusSink
from otel_traj.spanview import SpanView
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory

POLICY = Path(__file__).resolve().parent.parent / "examples" / "policies" / "support_agent.yaml"
USER = "Customer C023 here. I was charged twice for invoice INV-1002, please refund the 199 yuan."
MS = 1_000_000


def _step(k: int) -> tuple[str, dict[str, Any], Any]:
    """The k-th tool call of a long support run: lookups, payment checks, one refund at the end."""
    cycle = k % 3
    if cycle == 0:
        return "get_subscription", {"customer_id": "C023", "page": k}, {"plan": "pro", "status": "active"}
    if cycle == 1:
        invoices = [{"invoice_id": f"INV-{1000 + k}", "amount_yuan": 199.0, "status": "paid"}]
        return "list_invoices", {"customer_id": "C023", "page": k}, invoices
    return "check_payment", {"invoice_id": f"INV-{999 + k}"}, {"charges": 2}


def record_run(steps: int) -> list[SpanView]:
    """Emit one agent run of ``steps`` tool calls with the SDK and return its spans as SpanViews."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("benchmark")
    calls = [_step(k) for k in range(steps - 1)]
    calls.append(
        ("create_refund_request", {"invoice_id": "INV-1002", "amount_yuan": 199, "reason": "dup"}, {})
    )
    t = 1_000_000_000_000
    root = tracer.start_span(
        "invoke_agent support_agent",
        start_time=t,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support_agent",
            "gen_ai.conversation.id": "conv-bench",
            "app.customer_id": "C023",
        },
    )
    ctx = trace.set_span_in_context(root)
    history: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": USER}]}]
    for n, (name, arguments, result) in enumerate(calls):
        part = {"type": "tool_call", "id": f"call_{n}", "name": name, "arguments": arguments}
        t += MS
        tracer.start_span(
            "chat gpt-4o-mini",
            context=ctx,
            start_time=t,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": 100 + 10 * n,
                "gen_ai.usage.output_tokens": 10,
                "gen_ai.input.messages": json.dumps(history),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [part]}]),
            },
        ).end(end_time=t + 5 * MS)
        t += 6 * MS
        tracer.start_span(
            f"execute_tool {name}",
            context=ctx,
            start_time=t,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": f"call_{n}",
                "gen_ai.tool.call.arguments": json.dumps(arguments),
                "gen_ai.tool.call.result": json.dumps(result),
            },
        ).end(end_time=t + 2 * MS)
        t += 3 * MS
        history.append({"role": "assistant", "parts": [part]})
        history.append(
            {"role": "user", "parts": [{"type": "tool_call_response", "id": f"call_{n}", "result": result}]}
        )
    answer = "Your refund for INV-1002 has been submitted."
    root.set_attribute(
        "gen_ai.output.messages",
        json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]),
    )
    root.set_attribute("gen_ai.input.messages", json.dumps(history[:1]))
    root.end(end_time=t + MS)
    provider.shutdown()
    return [from_readable_span(span) for span in exporter.get_finished_spans()]


def per_item_us(fn: Callable[[], object], repeat: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e6


def measure(steps: int, rounds: int) -> dict[str, Any]:
    views = record_run(steps)
    [trajectory] = trajectories_from_views(views)
    assert len(trajectory.tool_calls) == steps, len(trajectory.tool_calls)
    grader = Grader(load_policy(POLICY))
    verdict = grader.grade(trajectory)
    repeat = max(20, 2000 // steps)

    def assemble() -> list[Trajectory]:
        return trajectories_from_views(views)

    def grade() -> object:
        return grader.grade(trajectory)

    sink = PrometheusSink(registry=CollectorRegistry())

    def export() -> None:
        sink.export(verdict)

    assemble_us: list[float] = []
    grade_us: list[float] = []
    export_us: list[float] = []
    for _ in range(rounds):
        assemble_us.append(per_item_us(assemble, repeat))
        grade_us.append(per_item_us(grade, repeat))
        export_us.append(per_item_us(export, repeat))
    a, g = statistics.median(assemble_us), statistics.median(grade_us)
    return {
        "steps": steps,
        "spans": len(views),
        "checks": len(verdict.checks),
        "outcome": verdict.outcome,
        "assemble_us": round(a, 1),
        "grade_us": round(g, 1),
        "prometheus_export_us": round(statistics.median(export_us), 1),
        "assemble_per_s": round(1e6 / a),
        "grade_per_s": round(1e6 / g),
        "grade_over_assemble": round(g / a, 3),
    }


def large_run(steps: int, size: int = 2000) -> Trajectory:
    """``steps`` tool calls with ~``size`` characters of result each."""
    calls = []
    for k in range(steps):
        rows: list[dict[str, Any]] = []
        while len(json.dumps(rows)) < size:
            rows.append({"invoice_id": f"INV-{k}{len(rows):03d}", "amount_yuan": 199.5, "ref": "1" * 11})
        arguments: dict[str, Any]
        if k % 2:
            invoice = f"INV-{k - 1}000" if k % 10 != 9 else "1"
            name, arguments = "check_payment", {"invoice_id": invoice}
        else:
            name, arguments = "list_invoices", {"customer_id": "C023", "page": k}
        start = 1_000_000_000 + k * 10 * MS
        calls.append(
            ToolCall(
                name=name,
                span_id=k + 1,
                start_ns=start,
                end_ns=start + 2 * MS,
                arguments=arguments,
                result=json.dumps(rows),
            )
        )
    return Trajectory(
        trace_id=steps,
        agent="support_agent",
        tool_calls=calls,
        user_input=USER,
        final_answer="Your refund for INV-1002 has been submitted.",
        start_ns=1,
        end_ns=calls[-1].end_ns,
    )


def measure_large(steps: int, rounds: int) -> dict[str, Any]:
    trajectory = large_run(steps)
    grader = Grader(load_policy(POLICY))
    grader.grade(trajectory)  # the first run of a policy also builds its plan
    times = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        verdict = grader.grade(trajectory)
        times.append((time.perf_counter() - start) * 1e3)
    return {
        "steps": steps,
        "result_mb": round(sum(len(c.result or "") for c in trajectory.tool_calls) / 1e6, 3),
        "worst_grade_ms": round(max(times), 3),
        "median_grade_ms": round(statistics.median(times), 3),
        "skipped": sum(1 for c in verdict.checks if c.status == "skipped"),
    }


def print_large(results: list[dict[str, Any]]) -> None:
    print(f"{'steps':>5} {'results MB':>10} {'worst ms':>9} {'median ms':>9} {'ratio':>6} {'size ratio':>10}")
    previous = None
    for r in results:
        ratio = size_ratio = ""
        if previous is not None:
            ratio = f"{r['worst_grade_ms'] / previous['worst_grade_ms']:.1f}"
            size_ratio = f"{r['steps'] / previous['steps']:.0f}"
        print(
            f"{r['steps']:>5} {r['result_mb']:>10} {r['worst_grade_ms']:>9} {r['median_grade_ms']:>9} "
            f"{ratio:>6} {size_ratio:>10}"
        )
        previous = r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", default="10,100")
    parser.add_argument("--large-sizes", default="1,10,100,1000", help="'' to leave the large runs out")
    parser.add_argument("--json", action="store_true", help="print one JSON object per size")
    args = parser.parse_args()
    results = [measure(int(size), args.rounds) for size in args.sizes.split(",") if size]
    large = [measure_large(int(size), args.rounds) for size in args.large_sizes.split(",") if size]
    if args.json:
        for result in results + large:
            print(json.dumps(result))
        return
    print(
        f"{'steps':>5} {'spans':>5} {'checks':>6} {'assemble us':>12} {'grade us':>9} "
        f"{'assembled/s':>11} {'graded/s':>9} {'grade/assemble':>14} {'prometheus us':>13}"
    )
    for r in results:
        print(
            f"{r['steps']:>5} {r['spans']:>5} {r['checks']:>6} {r['assemble_us']:>12} {r['grade_us']:>9} "
            f"{r['assemble_per_s']:>11} {r['grade_per_s']:>9} {r['grade_over_assemble']:>14} "
            f"{r['prometheus_export_us']:>13}"
        )
    ten = next((r for r in results if r["steps"] == 10), None)
    if ten is not None:
        verdict = "met" if ten["grade_us"] < ten["assemble_us"] else "NOT met"
        print(f"target (grading a 10-step trajectory costs less than assembling it): {verdict}")
    if large:
        print("\nworst time to grade one run with ~2 KB tool results (ratio to the size before):")
        print_large(large)


if __name__ == "__main__":
    main()
