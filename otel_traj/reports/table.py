"""Terminal table: one row per trajectory, its failed checks listed under it."""

from __future__ import annotations

from collections.abc import Sequence

from otel_traj.reports.summary import outcome_counts
from otel_traj.verdict import Verdict

_HEADER = ("TRACE", "AGENT", "OUTCOME", "SCORE", "CHECKS")


def _row(verdict: Verdict) -> tuple[str, ...]:
    checks = verdict.checks
    failed = sum(1 for c in checks if c.status == "fail")
    skipped = sum(1 for c in checks if c.status == "skipped")
    tally = f"{len(checks) - failed - skipped} pass, {failed} fail, {skipped} skipped"
    return (
        verdict.trajectory.trace_hex,
        verdict.trajectory.agent_label,
        verdict.outcome,
        f"{verdict.score:.2f}",
        tally,
    )


def render_table(verdicts: Sequence[Verdict]) -> str:
    rows = [_HEADER, *(_row(v) for v in verdicts)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    lines: list[str] = []
    for index, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if index == 0:
            continue
        for check in verdicts[index - 1].checks:
            if check.status == "fail":
                steps = f" [{', '.join(check.steps)}]" if check.steps else ""
                lines.append(f"    {check.severity:<8} {check.name}: {check.reason}{steps}")
    lines.append(outcome_counts(verdicts))
    return "\n".join(lines) + "\n"
