"""What the commands that read files share: their ``--policy`` and ``--cases`` files, their
``--jobs``, and where their report goes. Golden cases load only when asked for: a plain grade is
mostly start-up, in CI and pre-commit hooks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_traj import env

if TYPE_CHECKING:
    from otel_traj.cases import GoldenCase
    from otel_traj.policy import Policy


class InputError(Exception):
    """A bad input or an unwritable output: the message goes to stderr and the command exits 2."""


def load_inputs(
    policy_path: str | None, cases_path: str | None
) -> tuple[Policy | None, list[GoldenCase] | None]:
    """The policy and the golden cases in these files (None where no file is named); raises
    :class:`InputError` for an invalid one."""
    from otel_traj.policy import PolicyError, load_policy

    try:
        policy = load_policy(policy_path) if policy_path else None
    except PolicyError as exc:
        raise InputError(f"otel-traj: invalid policy\n{exc}") from None
    if not cases_path:
        return policy, None
    from otel_traj.cases import CaseFileError, load_cases

    try:
        return policy, load_cases(cases_path)
    except CaseFileError as exc:
        raise InputError(f"otel-traj: invalid cases: {exc}") from None


def add_jobs(parser: Any) -> None:
    """The ``--jobs N`` option of a command that reads trace files."""
    parser.add_argument(
        "--jobs",
        type=_jobs,
        metavar="N",
        help="worker processes that read, rebuild and grade the trace files, the report the same as "
        "with one (0: one per core from 16 MiB of input; 1: none, this process reads them; "
        f"{env.JOBS.cite()})",
    )


def _jobs(text: str) -> int:
    try:
        return env.SIZE.require("--jobs", int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected {env.SIZE.expected}") from None


def write_report(text: str, out: str | None) -> None:
    """Writes ``text`` to the file ``out``, else to stdout; raises :class:`InputError` when ``out``
    cannot be written."""
    if not out:
        sys.stdout.write(text)
        return
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"otel-traj: cannot write {out}: {exc}") from None
