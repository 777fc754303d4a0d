"""The sink role: where verdicts go. Sinks run on the processor's single background worker."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

from otel_traj.stats import PipelineStats
from otel_traj.verdict import CheckResult, Verdict

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict
    from otel_traj.judge.result import JudgeResult


@dataclass(slots=True, frozen=True)
class LiveViolation:
    """A violation found as soon as the offending tool span ended, before the run completes.

    Paging on another customer's data must not wait for a slow run to finish; the same violation is
    reported again in the final verdict, so sinks that count both must count it once.
    """

    trace_id: int
    agent: str
    tool: str
    step_id: str
    result: CheckResult


class Sink(ABC):
    """Receives verdicts on the worker thread. ``export`` must not block on the network: sinks that
    talk to servers queue and deliver on their own thread."""

    def __init__(self) -> None:
        # The sink's own drops and errors; whoever owns a pipeline registers them with its health
        # metrics, so a sink shared by two pipelines is counted once.
        self.stats = PipelineStats()

    @abstractmethod
    def export(self, verdict: Verdict) -> None: ...

    def on_live_violation(self, violation: LiveViolation) -> None:  # noqa: B027 - optional hook
        """Called for violations detected while the run is still in flight."""

    def export_conversation(self, verdict: ConversationVerdict) -> None:  # noqa: B027 - optional hook
        """Receives each conversation's verdict (``otel_traj.conversations``) on the worker thread;
        the same rule as ``export``: never block on the network."""

    def on_judgement(self, result: JudgeResult) -> None:  # noqa: B027 - optional hook
        """Receives an LLM judge's result (``otel_traj.judge``) on the judge's thread, after the run's
        verdict; the same rule as ``export``: never block on the network."""

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self, timeout_millis: int = 30_000) -> None:  # noqa: B027 - optional hook
        """Deliver what is pending within ``timeout_millis``, then release resources. Must return by
        the deadline whatever a server or thread does; what could not be delivered is counted."""
