"""ConversationVerdict: the grader's output for one conversation (every trace of one conversation id)."""

from __future__ import annotations

from dataclasses import dataclass, field

from otel_traj.conversations.summary import TraceSummary
from otel_traj.verdict import CheckResult, Outcome
from otel_traj.versions import Versions


@dataclass(slots=True)
class ConversationVerdict:
    """Shaped like a trajectory ``Verdict`` (outcome, score, checks) over the conversation's
    ``traces`` (summaries, in start order). ``complete`` is False when the conversation was graded
    before it went idle because the tracker's bounds were reached. ``versions``: the traces' merged
    (``otel_traj.versions.merged_versions``) with the policy that graded the conversation."""

    conversation_id: str
    agent: str
    traces: list[TraceSummary]
    checks: list[CheckResult] = field(default_factory=list)
    outcome: Outcome = "pass"
    score: float = 1.0
    complete: bool = True
    policy_version: str | None = None
    graded_at_ns: int = 0
    versions: Versions = field(default_factory=Versions)

    @property
    def trace_ids(self) -> list[str]:
        return [t.trace_id for t in self.traces]

    @property
    def tool_calls(self) -> int:
        return sum(t.tool_calls for t in self.traces)

    @property
    def model_turns(self) -> int:
        return sum(t.model_turns for t in self.traces)

    @property
    def input_tokens(self) -> int:
        return sum(t.input_tokens for t in self.traces)

    @property
    def output_tokens(self) -> int:
        return sum(t.output_tokens for t in self.traces)

    @property
    def total_cost_usd(self) -> float | None:
        """US dollars over the traces; ``None`` when a trace's cost is unknown (``cost_reason``),
        so a partial sum is never presented as the total."""
        costs = [t.cost_usd for t in self.traces]
        return None if None in costs else sum(c or 0.0 for c in costs)

    @property
    def cost_reason(self) -> str | None:
        """Why ``total_cost_usd`` is unknown: the first trace without a cost, and how many more."""
        unknown = [t for t in self.traces if t.cost_usd is None]
        if not unknown:
            return None
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        return f"trace {unknown[0].trace_id}: {unknown[0].cost_reason or 'cost not recorded'}{more}"

    @property
    def start_ns(self) -> int:
        return min((t.start_ns for t in self.traces), default=0)

    @property
    def end_ns(self) -> int:
        return max((t.end_ns for t in self.traces), default=0)

    @property
    def duration_s(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e9

    @property
    def failed_checks(self) -> list[CheckResult]:
        return [c for c in self.checks if c.failed]

    def trace_of(self, step_id: str) -> TraceSummary | None:
        """The trace holding tool call ``step_id``."""
        for trace in self.traces:
            if any(call.step_id == step_id for call in trace.calls):
                return trace
        return None
