"""The ``otel-traj`` command line. Each subcommand lives in its own module with a ``register``.

A command's module imports what the command runs (the grader, the service, the store), so ``main``
imports only the module of the command on its command line: the others are listed in ``--help`` by
name and help line alone, and ``--version`` imports none of them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Collection, Sequence
from typing import Any

# Each command and its line in ``otel-traj --help``, the same as its module's ``register`` gives it
# (tests/test_imports.py compares the two help texts).
COMMANDS = {
    "grade": "rebuild and grade trajectories from trace files",
    "policy": "validate a policy file, print its JSON Schema, or suggest one from observed runs",
    "serve": "receive OTLP traces, grade them, store the verdicts",
    "report": "list stored verdicts",
    "gate": "compare a candidate's runs with a baseline's and allow or block the release",
    "backfill": "grade runs already stored in Langfuse and write the scores back",
    "mcp": "serve the stored verdicts to coding agents over MCP (stdio or HTTP)",
}


class _Version(argparse.Action):
    """``--version``: reads the installed distribution's version only when asked for it."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import version

        print(f"otel-traj {version('otel-traj')}")
        parser.exit()


def build_parser(load: Collection[str] = tuple(COMMANDS)) -> argparse.ArgumentParser:
    """The parser of the commands in ``load`` (all by default); the other commands are listed by name
    and help line only, without importing their modules."""
    parser = argparse.ArgumentParser(
        prog="otel-traj",
        description="Grade AI-agent trajectories from OpenTelemetry spans.",
    )
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name, help_line in COMMANDS.items():
        if name in load:
            importlib.import_module(f"otel_traj.cli.{name}").register(subparsers)
        else:
            subparsers.add_parser(name, help=help_line)
    return parser


def _command(argv: Sequence[str]) -> tuple[str, ...]:
    """The command named on the command line: the top-level options take no value, so it is the first
    argument that is not an option."""
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    return (first,) if first in COMMANDS else ()


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(load=_command(argv)).parse_args(argv)
    try:
        code: int = args.run(args)
    except BrokenPipeError:
        # The reader went away (``otel-traj report | head``): stop quietly, as Unix tools do.
        # Point stdout at devnull so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":
    sys.exit(main())
