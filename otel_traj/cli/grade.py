"""``otel-traj grade PATH...``: rebuild (and, with a policy, grade) trajectories from trace files."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from otel_traj.adapters import TraceFileError, read_trace_files
from otel_traj.offline import trajectories_from_views
from otel_traj.pipeline import ungraded
from otel_traj.serialize import verdict_to_dict
from otel_traj.verdict import Verdict


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "grade",
        help="rebuild and grade trajectories from trace files",
        description="Read trace files (OTLP protobuf or JSON, JSON Lines, Tempo, Jaeger; "
        "auto-detected; directories are searched) and print each agent run's trajectory.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="trace files or directories")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(run=run)


def _table(verdicts: list[Verdict]) -> str:
    lines = []
    for v in verdicts:
        t = v.trajectory
        tools = " -> ".join(
            f"{c.name}{'' if c.ok else '!'}{'' if c.observed else '?'}" for c in t.tool_calls
        )
        lines.append(
            f"{t.trace_hex}  {t.agent_label}  turns={t.model_turns} "
            f"tokens={t.tokens.input}/{t.tokens.output}  "
            f"{'complete' if t.complete else 'INCOMPLETE'}\n    {tools or '(no tool calls)'}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        batch = read_trace_files(args.paths)
    except TraceFileError as exc:
        print(f"otel-traj: {exc}", file=sys.stderr)
        return 2
    verdicts = [ungraded(t) for t in trajectories_from_views(batch)]
    if args.format == "json":
        print(json.dumps({"trajectories": [verdict_to_dict(v) for v in verdicts]}, indent=2))
    else:
        print(_table(verdicts))
    return 0
