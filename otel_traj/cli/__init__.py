"""The ``otel-traj`` command line. Each subcommand lives in its own module with a ``register``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from importlib.metadata import version

COMMANDS = ("grade", "policy", "serve", "report")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="otel-traj",
        description="Grade AI-agent trajectories from OpenTelemetry spans.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"otel-traj {version('otel-traj')}",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"otel_traj.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
