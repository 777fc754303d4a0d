"""``otel-traj gate --baseline PATH... --candidate PATH...``: may the candidate be released?

A side may come from the store instead (live traffic): ``--store URL --baseline-where KEY=VALUE
--candidate-where KEY=VALUE [--since 24h]`` (``otel_traj.gate.stored``).

Exit codes, for CI: 0 when the release is allowed, 1 when it is blocked (every reason is printed),
2 on bad input (unreadable files, a side without runs, an invalid policy or case file, no run paired).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from otel_traj.cli.inputs import add_jobs

EXIT_ALLOWED = 0
EXIT_BLOCKED = 1
EXIT_INPUT = 2
FORMATS = ("table", "markdown", "json")


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _where(text: str) -> Any:
    from otel_traj.gate.stored import parse_where

    try:
        return parse_where(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _since(text: str) -> int:
    from otel_traj.cli.report import parse_since

    return parse_since(text)


def _sides_given(args: argparse.Namespace) -> str | None:
    """Why the sides asked for cannot be read, or None."""
    for side in ("baseline", "candidate"):
        files, where = getattr(args, side), getattr(args, f"{side}_where")
        if bool(files) == bool(where):
            return f"--{side} PATH... or --{side}-where KEY=VALUE: give one of them"
    if (args.baseline_where or args.candidate_where) and not args.store:
        return "--baseline-where and --candidate-where read --store: give it"
    return None


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "gate",
        help="compare a candidate's runs with a baseline's and allow or block the release",
        description="Pair the candidate's runs with the baseline's (by golden case, conversation id or "
        "user input) and apply the release rule: no new unsafe run, no more failing runs or failing "
        "error checks, pass^k not lower, efficiency within --max-regression of the baseline. Each side "
        "is trace files or directories, or the JSON of `otel-traj grade`, or the runs of a store "
        "(SQLite file or postgresql:// URL) matching --baseline-where / --candidate-where. Exit 0 "
        "allowed, 1 blocked, 2 bad input.",
    )
    parser.add_argument("--baseline", nargs="+", metavar="PATH", help="the baseline's runs")
    parser.add_argument("--candidate", nargs="+", metavar="PATH", help="the candidate's runs")
    parser.add_argument(
        "--store", metavar="PATH|URL", help="the store --baseline-where and --candidate-where read"
    )
    for side in ("baseline", "candidate"):
        parser.add_argument(
            f"--{side}-where",
            action="append",
            type=_where,
            metavar="KEY=VALUE",
            help=f"the {side}'s runs are the stored runs with KEY=VALUE (repeat: all of them); KEY is "
            "agent, service_name, service_version, conversation_id, versions.<key> or attributes.<key>",
        )
    parser.add_argument(
        "--since", type=_since, help="stored runs started since: 24h, 30m, 2d or an ISO 8601 time"
    )
    parser.add_argument("--policy", metavar="FILE", help="policy to grade trace files with")
    parser.add_argument("--cases", metavar="FILE", help="golden cases (JSONL): pair runs by case id")
    parser.add_argument("--match-on", metavar="ATTR", help="attribute whose value is a run's golden case id")
    parser.add_argument(
        "--max-regression",
        type=_ratio,
        default=0.2,
        metavar="RATIO",
        help="allowed relative rise of an efficiency figure (default 0.2 = 20%%)",
    )
    add_jobs(parser)
    parser.add_argument("--format", choices=FORMATS, default="table", help="report format")
    parser.add_argument("--out", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from otel_traj.cli.inputs import InputError, load_inputs, write_report
    from otel_traj.gate import CaseFinder, GateInputError, decide
    from otel_traj.gate.render import RENDERERS

    problem = _sides_given(args)
    if problem is not None:
        print(f"otel-traj gate: {problem}", file=sys.stderr)
        return EXIT_INPUT
    try:
        policy, cases = load_inputs(args.policy, args.cases)
    except InputError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INPUT
    finder = CaseFinder(cases, args.match_on)
    try:
        baseline, candidate = _load_sides(args, policy, finder)
    except GateInputError as exc:
        print(f"otel-traj: {exc}", file=sys.stderr)
        return EXIT_INPUT
    result = decide(baseline, candidate, args.max_regression)
    if not result.cases:
        print(
            "otel-traj: no candidate run pairs with a baseline run (by case, conversation or input)",
            file=sys.stderr,
        )
        return EXIT_INPUT
    try:
        write_report(RENDERERS[args.format](result), args.out)
    except InputError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INPUT
    return EXIT_ALLOWED if result.allowed else EXIT_BLOCKED


def _load_sides(args: argparse.Namespace, policy: Any, finder: Any) -> tuple[list[Any], list[Any]]:
    """Both sides' runs, each from files or from the store; raises ``GateInputError``."""
    from otel_traj.gate import GateInputError, load_side
    from otel_traj.gate.stored import load_stored_side
    from otel_traj.sinks.store_reader import StoreReader, open_store, read_errors, store_name
    from otel_traj.sinks.store_schema import StoreError

    store: StoreReader | None = None
    try:
        if args.store and (args.baseline_where or args.candidate_where):
            store = open_store(args.store)
        sides = []
        for side in ("baseline", "candidate"):
            where = getattr(args, f"{side}_where")
            if where and store is not None:
                sides.append(load_stored_side(store, where, args.since, finder, side))
            else:
                sides.append(load_side(getattr(args, side), policy, finder, side, args.jobs))
        return sides[0], sides[1]
    except StoreError as exc:
        raise GateInputError(str(exc)) from None
    except read_errors() as exc:
        raise GateInputError(f"{store_name(args.store)}: {exc}") from None
    finally:
        if store is not None:
            store.close()
