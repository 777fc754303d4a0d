"""``otel-traj gate --baseline PATH... --candidate PATH...``: may the candidate be released?

Exit codes, for CI: 0 when the release is allowed, 1 when it is blocked (every reason is printed),
2 on bad input (unreadable files, a side without runs, an invalid policy or case file, no run paired).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

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


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "gate",
        help="compare a candidate's runs with a baseline's and allow or block the release",
        description="Pair the candidate's runs with the baseline's (by golden case, conversation id or "
        "user input) and apply the release rule: no new unsafe run, no more failing runs or failing "
        "error checks, pass^k not lower, efficiency within --max-regression of the baseline. Each side "
        "is trace files or directories, or the JSON of `otel-traj grade`. Exit 0 allowed, 1 blocked, "
        "2 bad input.",
    )
    parser.add_argument("--baseline", nargs="+", required=True, metavar="PATH", help="the baseline's runs")
    parser.add_argument("--candidate", nargs="+", required=True, metavar="PATH", help="the candidate's runs")
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
    parser.add_argument("--format", choices=FORMATS, default="table", help="report format")
    parser.add_argument("--out", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from otel_traj.cli.inputs import InputError, load_inputs, write_report
    from otel_traj.gate import CaseFinder, GateInputError, decide, load_side
    from otel_traj.gate.render import RENDERERS

    try:
        policy, cases = load_inputs(args.policy, args.cases)
    except InputError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INPUT
    finder = CaseFinder(cases, args.match_on)
    try:
        baseline = load_side(args.baseline, policy, finder, "baseline")
        candidate = load_side(args.candidate, policy, finder, "candidate")
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
