"""``--store``, ``--langfuse``, ``--emit-otel`` and ``--judge`` of ``grade``: the sinks ``serve``
builds (``otel_traj.outputs``), and the lines that say on stderr what became of what they were given.

Judges run on every graded run (no sampling, within each judge's hourly cap) and publish to the other
sinks; their results never change the report or the exit code.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from otel_traj.offline import DELIVERY_TIMEOUT_MS
from otel_traj.outputs import Outputs, build_sinks

if TYPE_CHECKING:
    from otel_traj.judge.result import JudgeResult
    from otel_traj.judge.sink import JudgeSink
    from otel_traj.offline import Graded
    from otel_traj.policy import Policy
    from otel_traj.sinks.base import Sink
    from otel_traj.sinks.otel_events import EvaluationEventSink
    from otel_traj.sinks.store import SqliteSink
    from otel_traj.sinks.store_postgres import PostgresSink

# A command line waits this long for the judges; runs not judged by then are counted.
JUDGE_TIMEOUT_MS = 300_000


class GradeOutputs:
    """The sinks of ``args``; raises ``OutputError`` or ``StoreError`` when one cannot be built."""

    def __init__(self, args: argparse.Namespace, policy: Policy | None) -> None:
        self.judged: list[JudgeResult] = []
        self.emit_otel: str | None = args.emit_otel
        self.built = build_sinks(
            Outputs(
                store=args.store,
                langfuse=args.langfuse,
                emit_otel=args.emit_otel,
                judges=args.judge,
                sample_judges=False,
            ),
            policy=policy,
            redact=policy.is_sensitive if policy is not None else None,
            on_judgement=[self.judged.append],
        )

    @property
    def sinks(self) -> list[Sink]:
        return self.built.sinks

    @property
    def timeout_millis(self) -> int:
        return JUDGE_TIMEOUT_MS if self.built.judges is not None else DELIVERY_TIMEOUT_MS

    def summary(self, graded: Graded) -> list[str]:
        """What each sink did with what it was given, once they are shut down."""
        lines: list[str] = []
        if self.built.langfuse is not None:
            lines.append(f"langfuse: {self.built.langfuse.report().summary()}")
        if self.built.judges is not None:
            lines.extend(self._judges(self.built.judges))
        if self.built.events is not None:
            lines.append(self._events(self.built.events, graded))
        if self.built.store is not None:
            lines.append(_store(self.built.store))
        return lines

    def _judges(self, sink: JudgeSink) -> list[str]:
        lines = [
            f"judge {r.judge} on {r.trace_hex}: {r.score:.2f} {r.label}: {' '.join(r.explanation.split())}"
            for r in sorted(self.judged, key=lambda r: (r.trace_hex, r.judge))
        ]
        by_result: dict[str, int] = {}
        for (_, result), n in sorted(sink.stats.snapshot().judge_calls.items()):
            by_result[result] = by_result.get(result, 0) + n
        summary = ", ".join(f"{n} {result}" for result, n in by_result.items()) or "no calls"
        return [*lines, f"judges: {summary}"]

    def _events(self, sink: EvaluationEventSink, graded: Graded) -> str:
        records = (
            sum(len(v.checks) + 1 for v in graded.verdicts)
            + sum(len(c.checks) + 1 for c in graded.conversations or ())
            + len(self.judged)
        )
        target = f"{(self.emit_otel or '').rstrip('/')}/v1/logs"
        stats = sink.stats.snapshot()
        lost = sum(stats.dropped.values()) + sum(stats.sink_errors.values())
        if lost:
            return (
                f"events: {records} records for {len(graded.verdicts)} verdicts to {target}: "
                f"not all delivered ({lost} lost)"
            )
        return f"events: {records} records to {target}"


def _store(sink: SqliteSink | PostgresSink) -> str:
    stats = sink.stats.snapshot()
    lost = sum(stats.dropped.values()) + sum(stats.sink_errors.values())
    written = f"store: {sink.written} verdicts written to {sink.path}"
    return f"{written}: not all written ({lost} lost)" if lost else written
