"""Per-span cost of TrajectoryProcessor on the application's thread.

Baseline: a TracerProvider with a BatchSpanProcessor and a no-op exporter. Candidate: the same plus a
TrajectoryProcessor with the example policy. Both measured in the same run, in alternating rounds,
median of rounds. Targets, on the application's thread: <= 1.10x for GenAI-heavy agent trees,
<= 1.03x for non-GenAI spans. Wall clock of a CPU-bound span loop and the background CPU (grading on
the worker thread) are printed too.

    python benchmarks/overhead.py [--trees N] [--rounds R]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Tracer

from otel_traj.processor import TrajectoryProcessor

POLICY = Path(__file__).resolve().parent.parent / "examples" / "policies" / "support_agent.yaml"
USER = "Customer C023 here. I was charged twice for invoice INV-1002, please refund the 199 yuan."


class NoopExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def agent_tree(tracer: Tracer) -> int:
    """One agent run: root, 4 model turns, 4 tool calls (each with an HTTP client child): 13 spans."""
    calls = [
        ("get_subscription", {"customer_id": "C023"}),
        ("list_invoices", {"customer_id": "C023"}),
        ("check_payment", {"invoice_id": "INV-1002"}),
        ("create_refund_request", {"invoice_id": "INV-1002", "amount_yuan": 199, "reason": "dup"}),
    ]
    with tracer.start_as_current_span(
        "invoke_agent support_agent",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support_agent"},
    ):
        for i, (name, args) in enumerate(calls):
            with tracer.start_as_current_span(
                "chat gpt-4o-mini",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.usage.input_tokens": 100 * i + 50,
                    "gen_ai.usage.output_tokens": 10 * i + 5,
                    "gen_ai.response.finish_reasons": ("tool_calls",),
                },
            ):
                pass
            with (
                tracer.start_as_current_span(
                    f"execute_tool {name}",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.id": f"call_{i}",
                        "gen_ai.tool.call.arguments": json.dumps(args),
                        "gen_ai.tool.call.result": '{"status": "ok"}',
                    },
                ),
                tracer.start_as_current_span(
                    "GET", attributes={"http.request.method": "GET", "url.full": "http://billing/api"}
                ),
            ):
                pass
    return 13


def http_tree(tracer: Tracer) -> int:
    """A plain web request: server span with 10 attributes and 2 DB children: 3 spans."""
    attrs = {f"http.attr{i}": i for i in range(8)} | {"http.route": "/users", "http.method": "GET"}
    with tracer.start_as_current_span("GET /users", attributes=attrs):
        for _ in range(2):
            with tracer.start_as_current_span("SELECT", attributes={"db.system": "postgresql"}):
                pass
    return 3


def provider(with_traj: bool) -> TracerProvider:
    tp = TracerProvider()
    tp.add_span_processor(BatchSpanProcessor(NoopExporter(), max_queue_size=1_000_000))
    if with_traj:
        tp.add_span_processor(TrajectoryProcessor(policy=POLICY if POLICY.exists() else None))
    return tp


@dataclass
class Cost:
    """Per-span microseconds: wall clock of a tight span loop, CPU of the application's own thread,
    and CPU of everything else (exporter and grading threads, and the final drain at shutdown)."""

    wall: float
    app_cpu: float
    background_cpu: float


def measure(tree: Callable[[Tracer], int], with_traj: bool, trees: int) -> Cost:
    tp = provider(with_traj)
    tracer = tp.get_tracer("bench")
    for _ in range(50):
        tree(tracer)
    tp.force_flush()
    gc.collect()
    spans = 0
    process0, thread0, wall0 = time.process_time(), time.thread_time(), time.perf_counter()
    for _ in range(trees):
        spans += tree(tracer)
    wall1, thread1 = time.perf_counter(), time.thread_time()
    tp.shutdown()
    process1 = time.process_time()
    app = thread1 - thread0
    return Cost(
        wall=(wall1 - wall0) / spans * 1e6,
        app_cpu=app / spans * 1e6,
        background_cpu=((process1 - process0) - app) / spans * 1e6,
    )


def compare(label: str, tree: Callable[[Tracer], int], trees: int, rounds: int) -> tuple[float, float]:
    base, cand = [], []
    for _ in range(rounds):
        base.append(measure(tree, False, trees))
        cand.append(measure(tree, True, trees))

    def med(costs: list[Cost], field: str) -> float:
        return statistics.median(getattr(c, field) for c in costs)

    print(f"{label}")
    ratios = {}
    for field, title in (
        ("app_cpu", "application thread CPU"),
        ("wall", "wall clock, CPU-bound loop"),
        ("background_cpu", "background CPU"),
    ):
        b, c = med(base, field), med(cand, field)
        ratios[field] = c / b if b else float("nan")
        print(
            f"  {title:<28} baseline {b:6.2f} us/span   with TrajectoryProcessor {c:6.2f}   ratio {c / b:.3f}"
        )
    return ratios["app_cpu"], ratios["wall"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    genai_app, genai_wall = compare("GenAI agent trees (13 spans)", agent_tree, args.trees, args.rounds)
    plain_app, plain_wall = compare("non-GenAI spans (HTTP + DB)", http_tree, args.trees * 3, args.rounds)

    def verdict(ratio: float, target: float) -> str:
        return f"{ratio:.3f} ({'met' if ratio <= target else 'MISSED'})"

    print(
        f"targets on the application thread: GenAI <= 1.10: {verdict(genai_app, 1.10)}, "
        f"non-GenAI <= 1.03: {verdict(plain_app, 1.03)}"
    )
    print(
        f"wall clock when the application itself saturates the CPU: GenAI {genai_wall:.3f}, "
        f"non-GenAI {plain_wall:.3f} (grading competes for the GIL; an agent waiting on model calls "
        "leaves it idle)"
    )


if __name__ == "__main__":
    main()
