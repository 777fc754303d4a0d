"""Verdicts, sinks and an instrumented agent for the Langfuse tests: a graded run with a denied tool
call, a ``LangfuseSink`` that retries and flushes fast against the test server, and a support agent
that exports its spans to that server over OTLP/HTTP while ``TrajectoryProcessor`` grades them."""

from __future__ import annotations

from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_traj.config import AssemblerConfig
from otel_traj.policy import Policy, parse_policy
from otel_traj.processor import TrajectoryProcessor
from otel_traj.sinks.langfuse import LangfuseSink
from otel_traj.steps import ToolCall, span_hex
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Verdict
from tests.langfuse_server import LangfuseTestServer
from tests.semconv_agent import REFUND_USER, Call, Run, Turn

SCORES = "/api/public/scores"

END_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
SECRET = "sk-live-7d41b2c9"

# tools (trace + 1 observation) + order + score + outcome
SCORES_PER_VERDICT = 5

RESOURCE = Resource.create({"service.name": "support-svc", "service.version": "2.1.0"})

POLICY = {
    "version": 3,
    "defaults": {
        "tools": {"deny": ["delete_account"], "contracts": {"list_invoices": {"redact": ["customer_id"]}}},
        "scope": {
            "subject": {"attributes": ["app.customer_id"]},
            "arguments": {"list_invoices": "customer_id"},
        },
    },
}


def make_verdict(
    trace_id: int, tool_span_ids: tuple[int, int] = (0x11, 0x22), end_ns: int = END_NS
) -> Verdict:
    """A run with two tool calls: the second one is denied (a failing check naming its step)."""
    first, second = tool_span_ids
    traj = Trajectory(
        trace_id=trace_id,
        agent="support_agent",
        service_name="support-svc",
        service_version="2.1.0",
        tool_calls=[
            ToolCall(
                name="lookup",
                span_id=first,
                arguments={"customer_id": "C023", "api_key": SECRET},
                step_id=span_hex(first),
            ),
            ToolCall(
                name="delete_account",
                span_id=second,
                arguments={"customer_id": "C023"},
                step_id=span_hex(second),
            ),
        ],
        start_ns=end_ns - 2_000_000_000,
        end_ns=end_ns,
    )
    checks = [
        CheckResult("tools", "fail", "critical", "delete_account is denied", (span_hex(second),)),
        CheckResult("order", "pass", "error", f"lookup ran first (api_key={SECRET}, mail bob@example.com)"),
        CheckResult("arguments", "skipped", "error", "no argument schemas configured"),
    ]
    return Verdict(traj, checks, outcome="unsafe", score=0.5, policy_version="3@abc", graded_at_ns=end_ns + 5)


def fast_sink(server: LangfuseTestServer, **overrides: Any) -> LangfuseSink:
    settings: dict[str, Any] = {
        "public_key": server.public_key,
        "secret_key": server.secret_key,
        "base_url": server.url,
        "environment": "test",
        "flush_interval": 0.01,
        "backoff_initial": 0.001,
        "backoff_max": 0.01,
        "timeout": 5.0,
    }
    settings.update(overrides)
    return LangfuseSink(**settings)


def policy() -> Policy:
    return parse_policy(POLICY)


def violating_run(other_customer: str) -> Run:
    return Run(
        user=REFUND_USER,
        root_attributes={"app.customer_id": "C023"},
        turns=[
            Turn(calls=[Call("list_invoices", {"customer_id": other_customer}, [])]),
            Turn(calls=[Call("delete_account", {"customer_id": "C023"}, {"deleted": True})]),
            Turn(text="Done."),
        ],
    )


class Agent:
    """A TracerProvider exporting to the server over OTLP/HTTP and grading with the processor."""

    def __init__(self, server: LangfuseTestServer, sink: LangfuseSink, export_spans: bool = True) -> None:
        self.pol = policy()
        self.processor = TrajectoryProcessor(policy=self.pol, sinks=[sink], config=AssemblerConfig(grace_s=0))
        self.provider = TracerProvider(resource=RESOURCE)
        self.provider.add_span_processor(self.processor)
        if export_spans:
            exporter = OTLPSpanExporter(
                endpoint=f"{server.url}/api/public/otel/v1/traces",
                headers={"Authorization": server.auth_header},
            )
            self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("support-agent")

    def flush(self) -> None:
        assert self.provider.force_flush(10_000)
        assert self.processor.force_flush(10_000)
