"""``otel-traj report``: verdicts from the store (what ``serve``, a ``SqliteSink`` or a ``PostgresSink``
wrote): a SQLite file or a ``postgresql://`` URL."""

from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import UTC, datetime
from typing import Any

from otel_traj import env
from otel_traj.cli.report_conversations import report_conversations
from otel_traj.cli.report_table import failed_checks, print_report, render_rows, started
from otel_traj.sinks.store_reader import open_store, read_errors
from otel_traj.sinks.store_schema import Query, StoreError
from otel_traj.verdict import OUTCOMES

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


_MAX_NS = 2**63 - 1


def parse_since(value: str, now_ns: int | None = None) -> int:
    """``1h``, ``30m``, ``2d`` (ago) or an ISO 8601 time (UTC when it has no offset) -> unix ns."""
    text = value.strip()
    match = _DURATION.match(text)
    if match:
        now = time.time_ns() if now_ns is None else now_ns
        ago = float(match.group(1)) * _UNIT_S[match.group(2)] * 1e9
        return _stored_ns(now - ago)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--since {value!r}: expected a duration like 1h, 30m, 2d or an ISO 8601 time"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return _stored_ns(moment.timestamp() * 1e9)


def duration_s(value: str) -> float:
    """``30d``, ``12h``, ``90m`` or a number of seconds -> seconds (>= 0)."""
    text = value.strip()
    match = _DURATION.match(text)
    try:
        seconds = float(match.group(1)) * _UNIT_S[match.group(2)] if match else float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r}: expected a duration like 30d, 12h, 90m or seconds")
    return seconds


def _stored_ns(ns: float) -> int:
    """A time as the store keeps it, in SQLite's signed 64-bit integers: a moment past 2262 (or
    before 1970) matches what the range's end would."""
    return min(int(max(ns, 0.0)), _MAX_NS)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="list stored verdicts",
        description="Read verdicts from the store written by `otel-traj serve`, `grade --store` or a "
        "SqliteSink / PostgresSink: a SQLite file or a postgresql:// URL.",
    )
    parser.add_argument(
        "--store",
        default=env.STORE.read(),
        help=f"SQLite file or postgresql:// URL ({env.STORE.cite()})",
    )
    parser.add_argument(
        "--since", type=parse_since, help="runs started since: 1h, 30m, 2d or an ISO 8601 time"
    )
    parser.add_argument("--agent", help="only this agent (the agent name, else the service name)")
    parser.add_argument("--outcome", choices=OUTCOMES, help="only this outcome")
    parser.add_argument("--failed", metavar="CHECK", help="only runs in which this check failed, e.g. scope")
    parser.add_argument("--limit", type=int, help="at most this many trajectories (or conversations)")
    parser.add_argument(
        "--conversations",
        action="store_true",
        help="list conversation verdicts instead (--failed then names a conversation check)",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report to FILE")
    parser.set_defaults(run=run)


def render_table(verdicts: list[dict[str, Any]]) -> str:
    header = ("TRACE", "AGENT", "OUTCOME", "SCORE", "STARTED (UTC)", "TOOLS", "FAILED CHECKS")
    rows = [header]
    for v in verdicts:
        rows.append(
            (
                v["trace_id"],
                v["agent"],
                v["outcome"],
                f"{v['score']:.2f}",
                started(v),
                str(len(v["tool_calls"])),
                failed_checks(v),
            )
        )
    return render_rows(rows, (v["outcome"] for v in verdicts), f"{len(verdicts)} trajectories")


def run(args: argparse.Namespace) -> int:
    try:
        store = open_store(args.store)
    except read_errors(StoreError) as exc:
        print(f"otel-traj: {exc}", file=sys.stderr)
        return 2
    query = Query(
        since_ns=args.since, agent=args.agent, outcome=args.outcome, failed=args.failed, limit=args.limit
    )
    if args.conversations:
        return report_conversations(store, query, args)
    try:
        verdicts = store.verdicts(query)
    except read_errors() as exc:
        print(f"otel-traj: {store.name}: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    return print_report(args, "trajectories", verdicts, render_table, verdicts)
