"""The conversations' part of the HTML report: a card per conversation (outcome, totals, its checks
and reasons, its traces in order, each linked to its trajectory when the report holds it). Rendered
from the JSON shape of ``conversation_to_dict``, so the same cards come from ``grade`` and the store."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from html import escape
from typing import Any

OUTCOME_LABELS = {"pass_with_warnings": "pass with warnings"}


def checks_table(
    checks: Iterable[Mapping[str, Any]], empty: str, steps: Callable[[Mapping[str, Any]], str] | None = None
) -> str:
    """The checks as a table (status, check, severity, reason, and with ``steps`` a column of each
    check's steps), or the note ``empty`` when there is none."""
    rows = []
    for c in checks:
        status, severity = str(c.get("status", "")), str(c.get("severity", ""))
        warn = " warning" if status == "fail" and severity in ("warning", "info") else ""
        cells = (
            f'<td class="st {escape(status)}">{escape(status)}</td>'
            f"<td><b>{escape(str(c.get('name', '')))}</b></td><td>{escape(severity)}</td>"
            f"<td>{escape(str(c.get('reason', '')))}</td>"
        )
        if steps is not None:
            cells += f"<td class=mono>{escape(steps(c))}</td>"
        rows.append(f'<tr class="check {escape(status)}{warn}">{cells}</tr>')
    if not rows:
        return f'<p class="sub">{empty}</p>'
    head = "<th>status</th><th>check</th><th>severity</th><th>reason</th>"
    if steps is not None:
        head += "<th>steps</th>"
    return f'<table class="checks"><tr>{head}</tr>{"".join(rows)}</table>'


def _traces(conversation: Mapping[str, Any], anchors: Mapping[str, str]) -> str:
    rows = []
    for n, t in enumerate(conversation.get("traces") or (), 1):
        trace = str(t.get("trace_id", ""))
        ident = f'<a href="#{anchors[trace]}">{escape(trace)}</a>' if trace in anchors else escape(trace)
        outcome = str(t.get("outcome", ""))
        rows.append(
            f"<tr><td>{n}</td><td class=mono>{ident}</td>"
            f"<td>{escape(OUTCOME_LABELS.get(outcome, outcome))}</td>"
            f"<td>{float(t.get('score') or 0):.2f}</td><td>{int(t.get('tool_calls') or 0)}</td></tr>"
        )
    head = "<tr><th>turn</th><th>trace</th><th>outcome</th><th>score</th><th>tool calls</th></tr>"
    return (
        f"<details open><summary>Traces ({len(rows)})</summary><table>{head}{''.join(rows)}</table></details>"
    )


def _card(conversation: Mapping[str, Any], index: int, anchors: Mapping[str, str]) -> str:
    outcome = str(conversation.get("outcome") or "incomplete")
    meta = [
        ("conversation", conversation.get("conversation_id")),
        ("traces", len(conversation.get("trace_ids") or ())),
        ("duration", f"{float(conversation.get('duration_s') or 0):.1f} s"),
        (
            "tokens",
            f"{conversation.get('input_tokens') or 0:,} in / {conversation.get('output_tokens') or 0:,} out",
        ),
        ("turns", conversation.get("model_turns")),
        ("tool calls", conversation.get("tool_calls")),
        ("policy", conversation.get("policy_version")),
    ]
    meta_html = "".join(f"<span>{k}: <b class=mono>{escape(str(v))}</b></span>" for k, v in meta if v)
    if not conversation.get("complete", True):
        meta_html += "<span><b>graded early: the open conversations' bounds were reached</b></span>"
    checks = checks_table(conversation.get("checks") or (), "No conversation checks configured.")
    return (
        f'<section class="traj conv" id="c{index}" data-outcome="{escape(outcome)}" '
        f'style="--c:var(--{escape(outcome)},var(--ink))"><header>'
        f"<h2>conversation · {escape(str(conversation.get('agent') or 'unknown'))}</h2>"
        f'<span class="badge">{escape(OUTCOME_LABELS.get(outcome, outcome))}</span>'
        f"<span class=sub>score {float(conversation.get('score') or 0):.2f}</span></header>"
        f'<div class="meta">{meta_html}</div>{checks}{_traces(conversation, anchors)}'
        "</section>"
    )


def conversations_html(
    conversations: Sequence[Mapping[str, Any]], anchors: Mapping[str, str], rank: Mapping[str, int]
) -> str:
    """Cards worst outcome first; ``anchors``: trace id -> id of its trajectory's section."""
    if not conversations:
        return ""
    ordered = sorted(
        conversations, key=lambda c: (rank.get(str(c.get("outcome")), len(rank)), c.get("start_ns") or 0)
    )
    cards = "".join(_card(c, i, anchors) for i, c in enumerate(ordered))
    return f'<h2 class="group">Conversations ({len(ordered)})</h2>{cards}<h2 class="group">Trajectories</h2>'
