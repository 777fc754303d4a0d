"""JudgeResult: what one judge said about one run, published after (and apart from) its verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from otel_traj.steps import trace_hex
from otel_traj.verdict import Severity


@dataclass(slots=True, frozen=True)
class JudgeResult:
    """One judge's answer for one run: ``score`` in [0, 1], ``label`` one of the judge's labels and
    the model's ``explanation`` (as the model wrote it; sinks redact it before it leaves the process).
    ``span_id`` is the span the run's verdict is parented to (its agent span, else its root span).
    ``source`` tells it apart from the deterministic checks' results wherever both are stored."""

    trace_id: int
    agent: str
    judge: str
    model: str
    score: float
    label: str
    explanation: str
    severity: Severity
    end_ns: int
    judged_at_ns: int
    policy_version: str | None = None
    span_id: int | None = None
    source: Literal["judge"] = "judge"

    @property
    def trace_hex(self) -> str:
        return trace_hex(self.trace_id)
