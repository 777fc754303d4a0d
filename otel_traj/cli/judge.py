"""``--judge`` of ``grade``: the policy's LLM judges on every graded run (no sampling, within each
judge's hourly cap), after the verdicts; their results go to stderr (and to Langfuse with
``--langfuse``) and never change the report or the exit code."""

from __future__ import annotations

from collections.abc import Sequence

from otel_traj.judge.result import JudgeResult
from otel_traj.judge.sink import JudgeSink
from otel_traj.policy import Policy
from otel_traj.sinks.base import Sink
from otel_traj.verdict import Verdict

# A command line waits this long for the judges; runs not judged by then are counted.
TIMEOUT_MS = 300_000


def judge_verdicts(verdicts: Sequence[Verdict], policy: Policy | None, langfuse: bool) -> list[str]:
    """Judge ``verdicts``; the lines to print. Raises ``ValueError`` when judging cannot start (no
    judges in the policy, no endpoint key, no Langfuse key with ``langfuse``)."""
    if policy is None or not policy.has_judges():
        raise ValueError("the policy has no judges")
    outputs: list[Sink] = []
    if langfuse:
        from otel_traj.sinks.langfuse import LangfuseSink

        outputs.append(LangfuseSink(redact=policy.is_sensitive))
    results: list[JudgeResult] = []
    sink = JudgeSink(
        policy=policy,
        sinks=outputs,
        on_result=[results.append],
        max_queue=max(1, len(verdicts) * 8),
        sample=False,
    )
    for verdict in verdicts:
        sink.export(verdict)
    done = sink.force_flush(TIMEOUT_MS)
    sink.shutdown(0 if not done else TIMEOUT_MS)
    for output in outputs:
        output.force_flush(TIMEOUT_MS)
        output.shutdown(TIMEOUT_MS)
    lines = [
        f"judge {r.judge} on {r.trace_hex}: {r.score:.2f} {r.label}: {' '.join(r.explanation.split())}"
        for r in sorted(results, key=lambda r: (r.trace_hex, r.judge))
    ]
    counts = sink.stats.snapshot().judge_calls
    by_result: dict[str, int] = {}
    for (_, result), n in sorted(counts.items()):
        by_result[result] = by_result.get(result, 0) + n
    summary = ", ".join(f"{n} {result}" for result, n in by_result.items()) or "no calls"
    return [*lines, f"judges: {summary}"]
