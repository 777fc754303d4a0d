"""``otel-traj policy suggest PATH... [--store DB]``: a first policy from observed runs.

Exit 0 with the policy on stdout (or in ``--out``); 2 when the runs cannot be read, an option is
invalid, or no agent has ``--min-runs`` successful runs. Agents left out, and why, go to stderr.
Everything the command runs is imported when it runs, so ``policy check`` stays light.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from otel_traj import env
from otel_traj.cli.inputs import add_jobs

EXIT_OK = 0
EXIT_INPUT = 2


def add_parser(actions: Any) -> None:
    parser = actions.add_parser(
        "suggest",
        help="suggest a policy from observed runs (trace files or the store)",
        description="Derive a first policy from observed runs: budgets are ceil(factor x percentile) "
        "of the runs that ended with a final answer and no failed tool call; tools, order rules, "
        "scoped arguments, argument schemas and polling tools are read from the runs. Each rule "
        "carries a comment with what it rests on. Exit 2 when no agent has --min-runs successful runs.",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="trace files or directories (default: read --store)"
    )
    parser.add_argument(
        "--store",
        metavar="DB",
        help=f"read the runs from this verdict store (default without PATH: {env.STORE.cite()})",
    )
    parser.add_argument(
        "--agent", metavar="NAME", help="only this agent (the agent name, else the service name)"
    )
    parser.add_argument("--since", help="runs started since: 1h, 30m, 2d or an ISO 8601 time")
    parser.add_argument(
        "--percentile", type=int, default=90, help="percentile of successful runs (default 90)"
    )
    parser.add_argument(
        "--factor", type=float, default=1.5, help="budget = factor x percentile (default 1.5)"
    )
    parser.add_argument(
        "--min-runs",
        type=int,
        default=20,
        help="successful runs an agent needs, and runs an order rule needs (default 20)",
    )
    parser.add_argument(
        "--min-support",
        type=float,
        default=0.95,
        help="share of calls in which an argument equals the subject, to scope it (default 0.95)",
    )
    parser.add_argument(
        "--subject-attribute",
        action="append",
        default=[],
        metavar="ATTR",
        help="span attribute holding the run's subject (repeatable)",
    )
    parser.add_argument("--subject-pattern", metavar="REGEX", help="pattern of the subject")
    add_jobs(parser)
    parser.add_argument("--out", metavar="FILE", help="write the policy to FILE instead of stdout")
    parser.set_defaults(run=run)


def _fail(message: str) -> int:
    print(f"otel-traj: {message}", file=sys.stderr)
    return EXIT_INPUT


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from otel_traj.cli.inputs import InputError, write_report
    from otel_traj.cli.report import parse_since
    from otel_traj.policy.models import Scope
    from otel_traj.policy.suggest import SuggestSettings, suggest
    from otel_traj.policy.suggest_yaml import render_yaml
    from otel_traj.traffic import TrafficError, runs_from_files, runs_from_store, select

    try:
        since = parse_since(args.since) if args.since else None
    except argparse.ArgumentTypeError as exc:
        return _fail(str(exc))
    scope = None
    if args.subject_attribute or args.subject_pattern:
        subject = {"attributes": args.subject_attribute, "pattern": args.subject_pattern}
        try:
            scope = Scope.model_validate({"subject": subject})
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"].removeprefix("Value error, ")
            return _fail(f"--subject-pattern {args.subject_pattern!r}: {problem}")
    try:
        settings = SuggestSettings(args.percentile, args.factor, args.min_runs, args.min_support, scope)
    except ValueError as exc:
        return _fail(str(exc))
    store = args.store or (None if args.paths else env.STORE.read())
    try:
        runs = []
        if args.paths:
            runs = runs_from_files(args.paths, capture=args.subject_attribute, jobs=args.jobs)
        if store is not None:
            runs += runs_from_store(store, since, args.agent)
    except TrafficError as exc:
        return _fail(str(exc))
    suggestion = suggest(select(runs, since, args.agent), settings)
    for note in suggestion.notes:
        print(f"otel-traj: {note}", file=sys.stderr)
    if not suggestion.agents:
        return _fail(f"no agent has {settings.min_runs} successful runs in {suggestion.runs} runs: no policy")
    try:
        write_report(render_yaml(suggestion), args.out)
    except InputError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INPUT
    agents = ", ".join(f"{a.agent} ({a.successful} of {a.runs} runs succeeded)" for a in suggestion.agents)
    print(f"otel-traj: suggested rules for {agents}", file=sys.stderr)
    return EXIT_OK
