"""Markdown report, shaped like a pull-request comment: one row per trajectory x check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from otel_traj.reports.summary import outcome_counts
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict

_STATUS = {"pass": "✅ pass", "fail": "❌ fail", "skipped": "⏭️ skipped"}


def cell(text: str) -> str:
    """Table-safe text: pipes escaped, line breaks flattened, markup characters neutralised."""
    text = " ".join(text.split())
    for char in ("\\", "|", "`", "*", "_", "<", ">", "[", "]"):
        text = text.replace(char, "\\" + char)
    return text


def render_markdown(
    verdicts: Sequence[Verdict], conversations: Sequence[ConversationVerdict] | None = None
) -> str:
    lines = [
        "## Trajectory grades",
        "",
        outcome_counts(verdicts),
        "",
        "| Trajectory | Agent | Outcome | Score | Check | Status | Severity | Reason | Steps |",
        "|---|---|---|---:|---|---|---|---|---|",
    ]
    for verdict in verdicts:
        head = (
            f"`{verdict.trajectory.trace_hex}`",
            cell(verdict.trajectory.agent_label),
            f"**{verdict.outcome}**",
            f"{verdict.score:.2f}",
        )
        if not verdict.checks:
            lines.append("| " + " | ".join(head) + " | — | — | — | no checks configured | |")
        for check in verdict.checks:
            steps = ", ".join(f"`{s}`" for s in check.steps)
            row = (*head, check.name, _STATUS[check.status], check.severity, cell(check.reason), steps)
            lines.append("| " + " | ".join(row) + " |")
    if verdicts and (version := verdicts[0].policy_version):
        lines += ["", f"Policy version `{version}`."]
    if conversations:
        from otel_traj.reports.conversations import markdown_lines

        lines += markdown_lines(conversations, cell)
    return "\n".join(lines) + "\n"
