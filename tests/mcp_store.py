"""A verdict store filled by ``otel-traj grade --store``, for the MCP server's tests.

- the recorded runs of three frameworks (clean and violating), graded with the support agent's
  policy: the violating ones fail ``scope`` on the customer another customer's data was read for;
- the conversation runs as service version 1.2, graded with the conversations' policy (2
  conversations of 5 traces);
- the same conversations as version 1.3, in which the clean conversation's second turn lists another
  customer's invoices: the release gate blocks 1.3.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_traj.cli import main
from tests.conversation_runs import POLICY as CONVERSATIONS_POLICY
from tests.conversation_runs import conversation_runs, emit_all
from tests.real_frameworks import run_files
from tests.semconv_agent import INVOICES, Call, Run, Turn

ROOT = Path(__file__).resolve().parent.parent
SUPPORT_POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
FRAMEWORKS = ("openai_agents", "langgraph_openinference", "pydantic_ai")
SERVICE = "support-api"
# Runs each version of the conversations has.
CONVERSATION_TRACES = 5


def _candidate_runs() -> list[Run]:
    runs = conversation_runs()
    leak = Call("list_invoices", {"customer_id": "C077"}, INVOICES)
    clean_second = next(
        i for i, r in enumerate(runs) if r.conversation_id == "conv-clean" and "turn 1" in r.user
    )
    runs[clean_second] = dataclasses.replace(
        runs[clean_second], turns=[Turn(calls=[leak]), Turn(text="Two invoices.")]
    )
    return runs


def _write_version(path: Path, version: str, runs: list[Run]) -> Path:
    exporter = InMemorySpanExporter()
    resource = Resource.create({"service.name": SERVICE, "service.version": version})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    emit_all(provider, runs)
    provider.shutdown()
    path.write_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())
    return path


def fill_store(directory: Path) -> Path:
    store = directory / "verdicts.db"
    recorded = [str(p) for f in FRAMEWORKS for s in ("clean", "violating") for p in run_files(f, s)]
    baseline = _write_version(directory / "v1.2.otlp.pb", "1.2", conversation_runs())
    candidate = _write_version(directory / "v1.3.otlp.pb", "1.3", _candidate_runs())
    for files, policy in (
        (recorded, SUPPORT_POLICY),
        ([str(baseline)], CONVERSATIONS_POLICY),
        ([str(candidate)], CONVERSATIONS_POLICY),
    ):
        report = directory / "report.json"
        code = main(["grade", *files, "--policy", str(policy), "--store", str(store), "--out", str(report)])
        assert code in (0, 1), code
    return store
