"""``otel-traj report --conversations``: conversation verdicts from the store, as a table or JSON, and
in the HTML report with the stored trajectories of their traces."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from typing import Any

from otel_traj.cli.report_table import failed_checks, print_report, render_rows, started
from otel_traj.sinks.store_conversations import read_conversations
from otel_traj.sinks.store_schema import Query

_HEADER = ("CONVERSATION", "AGENT", "OUTCOME", "SCORE", "STARTED (UTC)", "TRACES", "TOOLS", "FAILED CHECKS")


def render_table(conversations: list[dict[str, Any]]) -> str:
    rows = [_HEADER]
    for c in conversations:
        rows.append(
            (
                c["conversation_id"],
                c["agent"],
                c["outcome"] + ("" if c["complete"] else " (evicted)"),
                f"{c['score']:.2f}",
                started(c),
                str(len(c["trace_ids"])),
                str(c["tool_calls"]),
                failed_checks(c),
            )
        )
    noun = "conversation" if len(conversations) == 1 else "conversations"
    return render_rows(rows, (c["outcome"] for c in conversations), f"{len(conversations)} {noun}")


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
    return print_report(args, "conversations", conversations, render_table, trajectories, conversations)
