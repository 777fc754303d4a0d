"""``otel-traj report --conversations``: conversation verdicts from the store, as a table or JSON, and
in the HTML report with the stored trajectories of their traces."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from otel_traj.reports.html import write_html
from otel_traj.sinks.store_conversations import read_conversations
from otel_traj.sinks.store_schema import Query

OUTCOMES = ("unsafe", "fail", "pass_with_warnings", "pass", "incomplete")
_HEADER = ("CONVERSATION", "AGENT", "OUTCOME", "SCORE", "STARTED (UTC)", "TRACES", "TOOLS", "FAILED CHECKS")


def render_table(conversations: list[dict[str, Any]]) -> str:
    rows = [_HEADER]
    for c in conversations:
        started = datetime.fromtimestamp(c["start_ns"] / 1e9, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
        failed = [check["name"] for check in c["checks"] if check["status"] == "fail"]
        rows.append(
            (
                c["conversation_id"],
                c["agent"],
                c["outcome"] + ("" if c["complete"] else " (evicted)"),
                f"{c['score']:.2f}",
                started,
                str(len(c["trace_ids"])),
                str(c["tool_calls"]),
                ", ".join(failed) or "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    counts = Counter(c["outcome"] for c in conversations)
    tally = ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o])
    noun = "conversation" if len(conversations) == 1 else "conversations"
    lines.append(f"{len(conversations)} {noun}" + (f": {tally}" if tally else ""))
    return "\n".join(lines)


def _trajectories(conn: sqlite3.Connection, trace_ids: list[str]) -> list[dict[str, Any]]:
    """The stored verdicts of these traces (those the store has), for the HTML report."""
    sql = "SELECT verdict FROM trajectories WHERE trace_id IN (SELECT value FROM json_each(?))"
    return [json.loads(text) for (text,) in conn.execute(sql, (json.dumps(trace_ids),))]


def report_conversations(conn: sqlite3.Connection, query: Query, args: argparse.Namespace) -> int:
    """Prints the conversations matching ``query`` and writes ``--html``; closes ``conn``."""
    try:
        conversations = read_conversations(conn, query)
        traces = [t for c in conversations for t in c["trace_ids"]]
        trajectories = _trajectories(conn, traces) if args.html else []
    except sqlite3.Error as exc:
        print(f"otel-traj: {args.store}: {exc}", file=sys.stderr)
        return 2
    finally:
        conn.close()
    if args.format == "json":
        print(json.dumps({"conversations": conversations}, indent=2, ensure_ascii=False))
    else:
        print(render_table(conversations))
    if args.html:
        try:
            write_html(args.html, trajectories, conversations=conversations)
        except OSError as exc:
            print(f"otel-traj: cannot write {args.html}: {exc}", file=sys.stderr)
            return 2
    return 0
