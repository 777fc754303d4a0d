"""``otel-traj report --conversations``: conversation verdicts from the store, as a table or JSON, and
in the HTML report with the stored trajectories of their traces."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from otel_traj.cli.report_table import failed_checks, print_report, render_rows, started
from otel_traj.sinks.store_reader import StoreReader, read_errors
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


def report_conversations(store: StoreReader, query: Query, args: argparse.Namespace) -> int:
    """Prints the conversations matching ``query`` and writes ``--html`` (with the stored verdicts of
    their traces); closes ``store``."""
    try:
        conversations = store.conversations(query)
        traces = [t for c in conversations for t in c["trace_ids"]]
        trajectories = store.trajectories(traces) if args.html else []
    except read_errors() as exc:
        print(f"otel-traj: {store.name}: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    return print_report(args, "conversations", conversations, render_table, trajectories, conversations)
