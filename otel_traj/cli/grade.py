"""``otel-traj grade PATH...``: rebuild (and, with a policy, grade) trajectories from trace files.

Exit codes, for CI: 0 when every trajectory and conversation is ``pass``, ``pass_with_warnings``,
``incomplete`` or ``unverified`` (not fully read or graded: the output says why); 1 when any is
``unsafe`` or ``fail``; 2 when an input is unreadable, when the inputs hold no trajectory at all (an
empty directory, only other JSON, spans without GenAI ones), or when the policy or case file is
invalid. With ``--cases`` each run is also graded against its golden case; pass@k and pass^k per case
go to stderr. ``-v`` lists on stderr each file read and each skipped, and why. ``--store``,
``--langfuse``, ``--emit-otel`` and ``--judge`` deliver through the sinks ``serve`` uses; what each
delivered is summarised on stderr, and a sink that cannot be configured (a missing key, a store that
cannot be opened) exits 2 before anything is graded.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from typing import TYPE_CHECKING, Any

from otel_traj.adapters import TraceFileError
from otel_traj.adapters.files import SkippedFile
from otel_traj.cli.grade_outputs import GradeOutputs
from otel_traj.cli.inputs import InputError, add_jobs, load_inputs, write_report
from otel_traj.offline import Graded, grade_runs, read_runs
from otel_traj.outputs import OutputError
from otel_traj.reports import RENDERERS, render
from otel_traj.sinks.store_schema import StoreError

if TYPE_CHECKING:
    from otel_traj.offline_read import FileRead, Inputs
    from otel_traj.policy import Policy
    from otel_traj.trajectory import Trajectory

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INPUT = 2
# Files named in the error when the inputs hold no trajectory; -v lists them all.
SKIPPED_SHOWN = 3


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "grade",
        help="rebuild and grade trajectories from trace files",
        description="Read trace files (OTLP protobuf or JSON, JSON Lines, Tempo, Jaeger; "
        "auto-detected; directories are searched), rebuild each agent run's trajectory and, with "
        "--policy, grade it. Exit 1 if any trajectory is unsafe or fails, 2 on unreadable input, "
        "on input that holds no trajectory, or on an invalid policy.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="trace files or directories")
    parser.add_argument("--policy", metavar="FILE", help="policy file (YAML or JSON) to grade against")
    parser.add_argument("--cases", metavar="FILE", help="golden cases (JSONL) to grade runs against")
    parser.add_argument("--match-on", metavar="ATTR", help="attribute whose value is a run's golden case id")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="say on stderr which file was read and which was skipped, and why",
    )
    add_jobs(parser)
    parser.add_argument("--format", choices=tuple(RENDERERS), default="table", help="report format")
    parser.add_argument("--out", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report to FILE")
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        help="also write the verdicts (and conversations, judge results) to this store (a SQLite file "
        "or a postgresql:// URL), as `otel-traj serve` does; `otel-traj report --store` lists them",
    )
    parser.add_argument(
        "--langfuse",
        action="store_true",
        help="also write the scores onto the traces in Langfuse (LANGFUSE_PUBLIC_KEY, "
        "LANGFUSE_SECRET_KEY, LANGFUSE_BASE_URL); delivery is summarised on stderr",
    )
    parser.add_argument(
        "--judge",
        action="store_true",
        help="also run the policy's LLM judges on every run (OPENAI_BASE_URL, OPENAI_API_KEY); their "
        "results go to stderr (and to the other outputs asked for) and never change the exit code",
    )
    parser.add_argument(
        "--emit-otel",
        metavar="URL",
        help="also export gen_ai.evaluation.result events over OTLP/HTTP to URL/v1/logs (URL: an "
        "OTLP/HTTP base URL such as http://127.0.0.1:4318); delivery is summarised on stderr",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        policy, cases = load_inputs(args.policy, args.cases)
    except InputError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INPUT
    try:
        runs = read_runs(args.paths, policy=policy, cases=cases, match_on=args.match_on, jobs=args.jobs)
    except TraceFileError as exc:
        print(f"otel-traj: {exc}", file=sys.stderr)
        return EXIT_INPUT
    skipped = runs.inputs.skipped + _without_trajectory(runs.inputs, runs.trajectories)
    if args.verbose:
        _print_inputs(runs.inputs, skipped)
    if not runs.trajectories:
        # A CI job must not pass having graded nothing.
        print(_nothing_to_grade(args.paths, skipped, listed=args.verbose), file=sys.stderr)
        return EXIT_INPUT
    outputs = _outputs(args, policy)
    if outputs is None:
        return EXIT_INPUT
    graded = grade_runs(
        runs,
        policy=policy,
        cases=cases,
        match_on=args.match_on,
        sinks=outputs.sinks,
        timeout_millis=outputs.timeout_millis,
    )
    # Delivered by now (the sinks are shut down), whether or not the report can be written.
    for line in outputs.summary(graded):
        print(f"otel-traj: {line}", file=sys.stderr)
    if graded.cases is not None:
        from otel_traj.cases import summary_lines

        print("\n".join(summary_lines(graded.cases)), file=sys.stderr)
    return report(args, graded)


def report(args: argparse.Namespace, graded: Graded) -> int:
    """Write the graded runs' report (``--format``, ``--out``, ``--html``); the exit code: 2 when it
    cannot be written, 1 when a run or conversation is unsafe or failed, else 0."""
    verdicts, conversations = graded.verdicts, graded.conversations
    try:
        write_report(render(args.format, verdicts, conversations), args.out)
    except InputError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INPUT
    if args.html:
        # The HTML report, like golden cases, loads only when asked for.
        from otel_traj.conversations.serialize import conversation_to_dict
        from otel_traj.reports.html import write_html
        from otel_traj.serialize import verdict_to_dict

        talks = [conversation_to_dict(c) for c in conversations or ()]
        try:
            write_html(args.html, [verdict_to_dict(v) for v in verdicts], conversations=talks)
        except OSError as exc:
            print(f"otel-traj: cannot write {args.html}: {exc}", file=sys.stderr)
            return EXIT_INPUT
    outcomes = [v.outcome for v in verdicts] + [c.outcome for c in conversations or ()]
    return EXIT_FAILED if any(o in ("unsafe", "fail") for o in outcomes) else EXIT_OK


def _outputs(args: argparse.Namespace, policy: Policy | None) -> GradeOutputs | None:
    """The sinks the flags ask for; None when one cannot be built (why is printed)."""
    try:
        return GradeOutputs(args, policy)
    except OutputError as exc:
        print(f"otel-traj: --{exc.output}: {exc}", file=sys.stderr)
    except (StoreError, OSError, sqlite3.Error) as exc:
        print(f"otel-traj: --store: {exc}", file=sys.stderr)
    return None


def _without_trajectory(inputs: Inputs, trajectories: list[Trajectory]) -> list[SkippedFile]:
    """The files that were read but hold no span of any trajectory."""
    traced = {t.trace_id for t in trajectories}
    unused = [file for file in inputs.files if file.traces.isdisjoint(traced)]
    return [SkippedFile(file.path, _why_unused(file)) for file in unused]


def _why_unused(file: FileRead) -> str:
    if file.spans:
        return "no GenAI spans"
    if file.events:
        return "no GenAI events of a span read"
    return _malformed(file) if file.malformed_spans else "no spans"


def _malformed(file: FileRead) -> str:
    """The spans a file held that were not read: a run they belong to cannot be graded on them."""
    why = "an id that is not hex, or a field of the wrong type"
    kept = f" ({file.kept_malformed} kept as unreadable steps of their runs)" if file.kept_malformed else ""
    return f"{file.malformed_spans} malformed spans not read{kept}: {why}"


def _print_inputs(inputs: Inputs, skipped: list[SkippedFile]) -> None:
    passed_over = {s.path for s in skipped}
    for file in inputs.files:
        if file.path not in passed_over:
            print(f"otel-traj: read {file.path}: {file.format}, {_held(file)}", file=sys.stderr)
    for entry in skipped:
        print(f"otel-traj: skipped {entry.path}: {entry.reason}", file=sys.stderr)
    if inputs.unattached:
        print(
            f"otel-traj: {inputs.unattached} GenAI events from log records name no span read", file=sys.stderr
        )


def _held(file: FileRead) -> str:
    """What a file read held: its spans, or a logs file's GenAI events (and its unreadable records)."""
    if file.spans or file.malformed_spans:
        events = f", {file.events} GenAI events" if file.events else ""
        malformed = f", {_malformed(file)}" if file.malformed_spans else ""
        return f"{file.spans} spans{events}{malformed}"
    unreadable = f", {file.unreadable_records} unreadable records" if file.unreadable_records else ""
    return f"{file.events} GenAI events{unreadable}"


def _nothing_to_grade(paths: list[str], skipped: list[SkippedFile], listed: bool) -> str:
    where = ", ".join(paths)
    if not skipped:
        return f"otel-traj: no trajectory to grade: no files in {where}"
    shown = ", ".join(str(s.path) for s in skipped[:SKIPPED_SHOWN])
    more = f" and {len(skipped) - SKIPPED_SHOWN} more" if len(skipped) > SKIPPED_SHOWN else ""
    files = "file" if len(skipped) == 1 else "files"
    hint = "" if listed or len(skipped) == 1 else "; -v lists each and why"
    if len(skipped) == 1:
        shown += f" ({skipped[0].reason})"
    return (
        f"otel-traj: no trajectory to grade in {where}: skipped {len(skipped)} {files}: {shown}{more}{hint}"
    )
