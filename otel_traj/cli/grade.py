"""``otel-traj grade PATH...``: rebuild (and, with a policy, grade) trajectories from trace files.

Exit codes, for CI: 0 when every trajectory and conversation is ``pass``, ``pass_with_warnings``,
``incomplete`` or ``unverified`` (not fully read or graded: the output says why); 1 when any is
``unsafe`` or ``fail``; 2 when an input is unreadable, when the inputs hold no trajectory at all (an
empty directory, only other JSON, spans without GenAI ones), or when the policy or case file is
invalid. With ``--cases`` each run is also graded against its golden case; pass@k and pass^k per case
go to stderr. ``-v`` lists on stderr each file read and each skipped, and why.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from otel_traj.adapters import TraceFileError
from otel_traj.adapters.files import SkippedFile, TraceFile, TraceInputs, read_trace_inputs
from otel_traj.cli.inputs import InputError, load_inputs, write_report
from otel_traj.config import AssemblerConfig
from otel_traj.grader import Grader
from otel_traj.live import subject_attributes
from otel_traj.offline import trajectories_from_views
from otel_traj.pipeline import ungraded
from otel_traj.progress import track
from otel_traj.reports import RENDERERS, render

if TYPE_CHECKING:
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
    parser.add_argument("--format", choices=tuple(RENDERERS), default="table", help="report format")
    parser.add_argument("--out", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report to FILE")
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
        "results go to stderr (and Langfuse with --langfuse) and never change the exit code",
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
    grade = Grader(policy).grade if policy is not None else ungraded
    try:
        inputs = read_trace_inputs(args.paths)
    except TraceFileError as exc:
        print(f"otel-traj: {exc}", file=sys.stderr)
        return EXIT_INPUT
    # Like the processor: a policy's subject may live in a custom attribute on any span of the trace;
    # so may the attribute that names a run's golden case, which no policy needs to mention.
    capture = subject_attributes(policy) if policy is not None else ()
    if cases is not None:
        capture += tuple(key for key in (args.match_on, *(c.match_on for c in cases)) if key)
    config = AssemblerConfig().with_capture(capture)
    trajectories = trajectories_from_views(inputs.views, config)
    skipped = inputs.skipped + _without_trajectory(inputs, trajectories)
    if args.verbose:
        _print_inputs(inputs, skipped)
    if not trajectories:
        # A CI job must not pass having graded nothing.
        print(_nothing_to_grade(args.paths, skipped, listed=args.verbose), file=sys.stderr)
        return EXIT_INPUT
    verdicts = [grade(t) for t in track(trajectories, "grading")]
    conversations = None
    if policy is not None:
        from otel_traj.conversations import conversation_verdicts

        conversations = conversation_verdicts(verdicts, policy)
    if cases is not None:
        from otel_traj.cases import apply_cases, summary_lines

        verdicts, case_report = apply_cases(verdicts, cases, args.match_on)
        print("\n".join(summary_lines(case_report)), file=sys.stderr)
    try:
        write_report(render(args.format, verdicts, conversations), args.out)
    except InputError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INPUT
    if args.html:
        # The HTML report and Langfuse, like golden cases, load only when asked for.
        from otel_traj.conversations.serialize import conversation_to_dict
        from otel_traj.reports.html import write_html
        from otel_traj.serialize import verdict_to_dict

        talks = [conversation_to_dict(c) for c in conversations or ()]
        try:
            write_html(args.html, [verdict_to_dict(v) for v in verdicts], conversations=talks)
        except OSError as exc:
            print(f"otel-traj: cannot write {args.html}: {exc}", file=sys.stderr)
            return EXIT_INPUT
    if args.langfuse:
        from otel_traj.sinks.langfuse_offline import send_verdicts

        try:
            redact = policy.is_sensitive if policy is not None else None
            delivery = send_verdicts(verdicts, redact=redact, conversations=conversations or ())
        except ValueError as exc:
            print(f"otel-traj: --langfuse: {exc}", file=sys.stderr)
            return EXIT_INPUT
        print(f"otel-traj: langfuse: {delivery.summary()}", file=sys.stderr)
    if args.judge:
        from otel_traj.cli.judge import judge_verdicts

        try:
            lines = judge_verdicts(verdicts, policy, args.langfuse)
        except ValueError as exc:
            print(f"otel-traj: --judge: {exc}", file=sys.stderr)
            return EXIT_INPUT
        print("\n".join(f"otel-traj: {line}" for line in lines), file=sys.stderr)
    if args.emit_otel:
        from otel_traj.cli.emit import emit_events

        print(
            f"otel-traj: events: {emit_events(args.emit_otel, verdicts, conversations, policy)}",
            file=sys.stderr,
        )
    outcomes = [v.outcome for v in verdicts] + [c.outcome for c in conversations or ()]
    return EXIT_FAILED if any(o in ("unsafe", "fail") for o in outcomes) else EXIT_OK


def _without_trajectory(inputs: TraceInputs, trajectories: list[Trajectory]) -> list[SkippedFile]:
    """The files that were read but hold no span of any trajectory."""
    traced = {t.trace_id for t in trajectories}
    return [
        SkippedFile(file.path, _why_unused(file))
        for file in inputs.files
        if not any(view.trace_id in traced for view in file.views)
        and not any(trace_id in traced for trace_id, _ in file.events.by_span)
    ]


def _why_unused(file: TraceFile) -> str:
    if file.views:
        return "no GenAI spans"
    return "no GenAI events of a span read" if file.events.by_span else "no spans"


def _print_inputs(inputs: TraceInputs, skipped: list[SkippedFile]) -> None:
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


def _held(file: TraceFile) -> str:
    """What a file read held: its spans, or a logs file's GenAI events (and its unreadable records)."""
    if file.views:
        return f"{len(file.views)} spans"
    unreadable = f", {file.events.malformed} unreadable records" if file.events.malformed else ""
    return f"{file.events.events} GenAI events{unreadable}"


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
