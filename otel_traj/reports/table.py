"""Terminal table: one row per trajectory, then its tool path and its failed checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from otel_traj.reports.summary import outcome_counts
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict

_HEADER = ("TRACE", "AGENT", "OUTCOME", "STAGE", "SCORE", "TURNS", "TOKENS IN/OUT", "CHECKS")


def _row(verdict: Verdict) -> tuple[str, ...]:
    checks = verdict.checks
    failed = sum(1 for c in checks if c.status == "fail")
    skipped = sum(1 for c in checks if c.status == "skipped")
    tally = f"{len(checks) - failed - skipped} pass, {failed} fail, {skipped} skipped"
    t = verdict.trajectory
    return (
        t.trace_hex,
        t.agent_label,
        verdict.outcome,
        verdict.stage or "-",
        f"{verdict.score:.2f}",
        str(t.model_turns),
        f"{t.tokens.input}/{t.tokens.output}",
        tally if checks else "none",
    )


def _path(verdict: Verdict) -> str:
    """``get_subscription -> check_payment! -> refund?``: ``!`` failed, ``?`` requested but no span."""
    calls = verdict.trajectory.tool_calls
    path = " -> ".join(f"{c.name}{'' if c.ok else '!'}{'' if c.observed else '?'}" for c in calls)
    return path or "(no tool calls)"


def render_table(
    verdicts: Sequence[Verdict], conversations: Sequence[ConversationVerdict] | None = None
) -> str:
    rows = [_HEADER, *(_row(v) for v in verdicts)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    lines: list[str] = []
    for index, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if index == 0:
            continue
        verdict = verdicts[index - 1]
        lines.append(f"    {_path(verdict)}")
        for check in verdict.checks:
            if check.status == "fail":
                steps = f" [{', '.join(check.steps)}]" if check.steps else ""
                lines.append(f"    {check.severity:<8} {check.name}: {check.reason}{steps}")
    lines.append(outcome_counts(verdicts))
    if conversations:
        from otel_traj.reports.conversations import table_lines

        lines += ["", *table_lines(conversations)]
    return "\n".join(lines) + "\n"
