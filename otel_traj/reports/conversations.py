"""The conversations' part of every report: a row per conversation and its failed checks (table), a
row per conversation x check (markdown), a test suite (JUnit)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Sequence

from otel_traj.conversations import ConversationVerdict
from otel_traj.reports.junit_case import add_testcase, clean
from otel_traj.verdict import OUTCOMES

_HEADER = ("CONVERSATION", "AGENT", "OUTCOME", "SCORE", "TRACES", "TOOL CALLS", "TOKENS IN/OUT")
_STATUS = {"pass": "✅ pass", "fail": "❌ fail", "skipped": "⏭️ skipped"}


def conversation_counts(verdicts: Sequence[ConversationVerdict]) -> str:
    """``2 conversations: 1 unsafe, 1 pass``."""
    counts = Counter(v.outcome for v in verdicts)
    parts = [f"{counts[o]} {o}" for o in OUTCOMES if counts[o]]
    noun = "conversation" if len(verdicts) == 1 else "conversations"
    return f"{len(verdicts)} {noun}" + (f": {', '.join(parts)}" if parts else "")


def table_lines(verdicts: Sequence[ConversationVerdict]) -> list[str]:
    rows = [_HEADER] + [
        (
            v.conversation_id,
            v.agent,
            v.outcome + ("" if v.complete else " (evicted)"),
            f"{v.score:.2f}",
            str(len(v.traces)),
            str(v.tool_calls),
            f"{v.input_tokens}/{v.output_tokens}",
        )
        for v in verdicts
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    lines: list[str] = []
    for index, row in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if index:
            for check in verdicts[index - 1].failed_checks:
                lines.append(f"    {check.severity:<8} {check.name}: {check.reason}")
    lines.append(conversation_counts(verdicts))
    return lines


def markdown_lines(verdicts: Sequence[ConversationVerdict], cell: Callable[[str], str]) -> list[str]:
    lines = [
        "",
        "## Conversation grades",
        "",
        conversation_counts(verdicts),
        "",
        "| Conversation | Agent | Outcome | Score | Traces | Check | Status | Severity | Reason |",
        "|---|---|---|---:|---:|---|---|---|---|",
    ]
    for v in verdicts:
        head = (
            f"`{cell(v.conversation_id)}`",
            cell(v.agent),
            f"**{v.outcome}**",
            f"{v.score:.2f}",
            str(len(v.traces)),
        )
        if not v.checks:
            lines.append("| " + " | ".join(head) + " | — | — | — | no checks configured |")
        for check in v.checks:
            row = (*head, check.name, _STATUS[check.status], check.severity, cell(check.reason))
            lines.append("| " + " | ".join(row) + " |")
    return lines


def junit_suite(root: ET.Element, verdicts: Sequence[ConversationVerdict]) -> dict[str, int]:
    """A ``conversations`` test suite: a test case per conversation x check; returns its counts."""
    suite = ET.SubElement(root, "testsuite", name="conversations")
    counts = {"tests": 0, "failures": 0, "skipped": 0}
    for v in verdicts:
        classname = clean(f"{v.agent}.conversation.{v.conversation_id}")
        out = (
            f"conversation {v.conversation_id} traces {', '.join(v.trace_ids)}"
            f" outcome {v.outcome} score {v.score:.2f}"
        )
        for check in v.checks:
            add_testcase(suite, check, classname, counts, out)
    for key, value in counts.items():
        suite.set(key, str(value))
    return counts
