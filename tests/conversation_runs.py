"""Multi-turn conversations, one trace per user turn, emitted as GenAI semantic-convention spans.

``conv-switch`` looks the same invoices up in every turn and, in its third turn, serves another
customer (each trace alone is in scope: its own subject attribute names that customer);
``conv-clean`` stays on one customer and never repeats a call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_traj import TrajectoryProcessor
from otel_traj.conversations import ConversationVerdict
from otel_traj.policy import Policy, parse_policy
from otel_traj.verdict import Verdict
from tests.semconv_agent import INVOICES, Call, Run, Turn, emit

ROOT = Path(__file__).resolve().parent.parent
POLICY = ROOT / "examples" / "policies" / "support_conversations.yaml"
SECOND = 1_000_000_000


def _turn(conversation: str, n: int, customer: str, calls: list[Call], answer: str) -> Run:
    return Run(
        user=f"Customer {customer} here, turn {n}.",
        conversation_id=conversation,
        root_attributes={"app.customer_id": customer},
        start_ns=1_000 * SECOND + n * 60 * SECOND + (0 if conversation == "conv-switch" else 7 * SECOND),
        turns=[Turn(calls=calls), Turn(text=answer)],
    )


def conversation_runs() -> list[Run]:
    lookup = Call("list_invoices", {"customer_id": "C023"}, INVOICES)
    subscription = Call("get_subscription", {"customer_id": "C023"}, {"plan": "pro"})
    payment = Call("check_payment", {"invoice_id": "INV-1002"}, {"charges": 2})
    other = Call("get_subscription", {"customer_id": "C077"}, {"plan": "basic"})
    return [
        _turn("conv-switch", 0, "C023", [subscription, lookup], "You are on pro."),
        _turn("conv-switch", 1, "C023", [lookup, payment], "Charged twice."),
        _turn("conv-switch", 2, "C077", [other], "C077 is on basic."),
        _turn("conv-clean", 0, "C023", [subscription], "You are on pro."),
        _turn("conv-clean", 1, "C023", [lookup], "Two invoices."),
    ]


def emit_all(provider: TracerProvider, runs: list[Run] | None = None) -> list[int]:
    tracer = provider.get_tracer("conversation-test")
    return [emit(tracer, run) for run in (runs if runs is not None else conversation_runs())]


@contextmanager
def recorded() -> Iterator[list[ReadableSpan]]:
    """The finished spans of every conversation run, recorded by an SDK provider."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    emit_all(provider)
    provider.shutdown()
    yield list(exporter.get_finished_spans())


def processed(policy: Policy, runs: list[Run]) -> tuple[list[Verdict], ConversationVerdict]:
    """The runs' spans through a TrajectoryProcessor as the SDK calls it: the trace verdicts, oldest
    first, and the verdict of the one conversation they make."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    emit_all(provider, runs)
    provider.shutdown()
    spans = exporter.get_finished_spans()
    verdicts: list[Verdict] = []
    conversations: list[ConversationVerdict] = []
    processor = TrajectoryProcessor(
        policy=policy, on_verdict=verdicts.append, on_conversation=conversations.append
    )
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        processor.on_start(span)  # type: ignore[arg-type]
    for span in sorted(spans, key=lambda s: s.end_time or 0):
        processor.on_end(span)
    processor.shutdown()
    [conversation] = conversations
    return sorted(verdicts, key=lambda v: v.trajectory.start_ns), conversation


def write_otlp(path: Path) -> Path:
    """Every conversation run as one OTLP protobuf file (the official encoder)."""
    with recorded() as spans:
        path.write_bytes(encode_spans(spans).SerializeToString())
    return path


def redacting_policy() -> Policy:
    """The conversations' policy, with ``customer_id`` values kept out of what sinks publish."""
    document = yaml.safe_load(POLICY.read_text())
    document["redact"] = {"keys": ["customer_id"]}
    return parse_policy(document)
