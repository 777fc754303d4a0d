"""Conversation metrics of the Prometheus sink: outcomes, check results and per-conversation
histograms (traces, tool calls, tokens, duration). Labels are bounded as the sink's: the agent
through its label budget, checks from the fixed conversation check names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram

from otel_traj.conversations.checks import NAMES

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict

TRACE_BUCKETS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100)
STEP_BUCKETS = (0, 1, 2, 5, 10, 15, 20, 30, 40, 60, 80, 100, 150, 200, 300, 500)
TOKEN_BUCKETS = (1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 200_000, 400_000, 1_000_000, 2_500_000)
DURATION_BUCKETS = (10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400)


class ConversationMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.conversations = Counter(
            "otel_traj_conversations",
            "Graded conversations by outcome.",
            ["agent", "outcome"],
            registry=registry,
        )
        self.check_results = Counter(
            "otel_traj_conversation_check_results",
            "Check results of graded conversations.",
            ["agent", "check", "status", "severity"],
            registry=registry,
        )
        self.traces = Histogram(
            "otel_traj_conversation_traces",
            "Traces per conversation.",
            ["agent"],
            registry=registry,
            buckets=TRACE_BUCKETS,
        )
        self.tool_calls = Histogram(
            "otel_traj_conversation_tool_calls",
            "Tool calls per conversation.",
            ["agent"],
            registry=registry,
            buckets=STEP_BUCKETS,
        )
        self.tokens = Histogram(
            "otel_traj_conversation_tokens",
            "Tokens per conversation (input, output, total).",
            ["agent", "type"],
            registry=registry,
            buckets=TOKEN_BUCKETS,
        )
        self.duration = Histogram(
            "otel_traj_conversation_duration_seconds",
            "From the first trace's start to the last trace's end.",
            ["agent"],
            registry=registry,
            buckets=DURATION_BUCKETS,
        )

    def observe(self, verdict: ConversationVerdict, agent: str) -> None:
        exemplar = {"trace_id": verdict.trace_ids[-1]} if verdict.traces else None
        self.conversations.labels(agent, verdict.outcome).inc(exemplar=exemplar)
        for check in verdict.checks:
            name = check.name if check.name in NAMES else "other"
            self.check_results.labels(agent, name, check.status, check.severity).inc()
        self.traces.labels(agent).observe(len(verdict.traces))
        self.tool_calls.labels(agent).observe(verdict.tool_calls)
        self.tokens.labels(agent, "input").observe(verdict.input_tokens)
        self.tokens.labels(agent, "output").observe(verdict.output_tokens)
        self.tokens.labels(agent, "total").observe(verdict.input_tokens + verdict.output_tokens)
        self.duration.labels(agent).observe(verdict.duration_s)
