"""What ``otel-traj report`` prints for trajectories and for conversations alike: a table with a tally
of outcomes, or JSON, and the ``--html`` report beside it."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from otel_traj.reports.html import write_html
from otel_traj.verdict import OUTCOMES


def started(record: Mapping[str, Any]) -> str:
    """When a stored run or conversation started, in UTC, to the second."""
    return datetime.fromtimestamp(record["start_ns"] / 1e9, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def failed_checks(record: Mapping[str, Any]) -> str:
    failed = [check["name"] for check in record["checks"] if check["status"] == "fail"]
    return ", ".join(failed) or "-"


def render_rows(rows: Sequence[Sequence[str]], outcomes: Iterable[str], total: str) -> str:
    """``rows`` (the header first) in columns as wide as their widest cell, then ``total`` with the
    count of each outcome."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    counts = Counter(outcomes)
    tally = ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o])
    lines.append(total + (f": {tally}" if tally else ""))
    return "\n".join(lines)


def print_report(
    args: argparse.Namespace,
    key: str,
    records: list[dict[str, Any]],
    render_table: Callable[[list[dict[str, Any]]], str],
    trajectories: list[dict[str, Any]],
    conversations: list[dict[str, Any]] | None = None,
) -> int:
    """Prints ``records`` as ``--format`` asks (JSON under ``key``) and writes ``--html``; the exit code."""
    if args.format == "json":
        print(json.dumps({key: records}, indent=2, ensure_ascii=False))
    else:
        print(render_table(records))
    if args.html:
        try:
            write_html(args.html, trajectories, conversations=conversations or ())
        except OSError as exc:
            print(f"otel-traj: cannot write {args.html}: {exc}", file=sys.stderr)
            return 2
    return 0
