"""``otel-traj backfill --from langfuse --policy FILE``: grade the runs already stored in Langfuse and
write the scores onto their traces.

Reads the project of ``LANGFUSE_PUBLIC_KEY`` / ``LANGFUSE_SECRET_KEY`` at ``LANGFUSE_BASE_URL`` (else
``LANGFUSE_HOST``, else Langfuse Cloud), the traces started in ``[--since, --until)``, oldest first,
rebuilds each run, grades it with the policy and delivers the verdicts through the ``LangfuseSink``
(score ids are derived from trace, observation and check: a second backfill overwrites, adds no
score) and ``--store``. ``--dry-run`` writes nothing to Langfuse. Output and exit codes as ``grade``'s:
0 when every run passes or is ``incomplete``/``unverified``; 1 when any is ``unsafe`` or ``fail``;
2 on an invalid policy or setting, or when reading stopped on a failure (after grading what was read).
What became of every trace listed is counted on stderr.

``otel-traj backfill --from otlp-json URL --trace-ids FILE --policy FILE`` reads the traces FILE
names from a backend that answers a trace id with OTLP/JSON (``backfill.otlp``: URL is a template
holding ``{trace_id}``, as Tempo's ``.../api/v2/traces/{trace_id}`` or Jaeger v2's
``.../api/v3/traces/{trace_id}``), grades them and reports as ``grade`` does (and into ``--store``);
it writes no score anywhere else.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sqlite3
import sys
import time
from typing import TYPE_CHECKING, Any

from otel_traj import env
from otel_traj.cli.grade import EXIT_FAILED, EXIT_INPUT, EXIT_OK, report
from otel_traj.cli.inputs import InputError, load_inputs
from otel_traj.outputs import OutputError, Outputs, build_sinks
from otel_traj.reports import RENDERERS
from otel_traj.sinks.store_schema import StoreError

if TYPE_CHECKING:
    from otel_traj.backfill.run import Backfilled
    from otel_traj.offline import Graded
    from otel_traj.outputs import SinkSet

SOURCE = "langfuse"
OTLP_JSON = "otlp-json"
# Settings that select Langfuse traces: the trace ids file or the search selects those of an OTLP/JSON
# backend (the search with the time window, --since and --until).
_LANGFUSE_ONLY = ("name", "tag", "user_id", "session_id", "environment", "dry_run")
_WINDOW = ("since", "until")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class SettingError(ValueError):
    """A setting of the command line that cannot be used; the message says which and why."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "backfill",
        help="grade runs already stored in Langfuse and write the scores back",
        description="Read a Langfuse project's traces (LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY, "
        "LANGFUSE_BASE_URL), rebuild and grade each run with the policy, and write the scores onto the "
        "traces. Exit 1 if any run is unsafe or fails, 2 on an invalid policy or setting or when "
        "reading stopped on a failure.",
    )
    parser.add_argument(
        "--from",
        dest="source",
        nargs="+",
        metavar="SOURCE",
        required=True,
        help=f"where the runs are: `{SOURCE}`, or `{OTLP_JSON} URL` for a backend that answers a trace id "
        "with OTLP/JSON (URL holds {trace_id}: http://tempo:3200/api/v2/traces/{trace_id}, "
        "http://jaeger:16686/api/v3/traces/{trace_id})",
    )
    parser.add_argument(
        "--trace-ids", metavar="FILE", help=f"with --from {OTLP_JSON}: the trace ids to read, one a line"
    )
    parser.add_argument(
        "--search",
        metavar="URL",
        help=f"with --from {OTLP_JSON}: read the trace ids this search URL answers (Tempo's /api/search, "
        "Jaeger's /api/traces or /api/v3/traces); {since} and {until} in it become --since and --until "
        "in Unix seconds, {since_rfc3339} and {until_rfc3339} the same in RFC 3339",
    )
    parser.add_argument("--policy", metavar="FILE", required=True, help="policy file (YAML or JSON)")
    parser.add_argument(
        "--since",
        metavar="WHEN",
        help="traces started at or after WHEN: a duration ago (90s, 30m, 24h, 7d), an ISO 8601 time, "
        "or `last` (where the previous backfill into --store stopped; everything the first time)",
    )
    parser.add_argument("--until", metavar="WHEN", help="traces started before WHEN (duration ago or ISO)")
    parser.add_argument("--limit", type=int, metavar="N", help="grade at most N traces, the oldest first")
    parser.add_argument("--name", help="only traces of this name")
    parser.add_argument("--tag", action="append", default=[], help="only traces with this tag (repeatable)")
    parser.add_argument("--user-id", help="only traces of this user")
    parser.add_argument("--session-id", help="only traces of this session")
    parser.add_argument("--environment", help="only traces of this Langfuse environment")
    parser.add_argument("--rps", type=float, default=5.0, help="at most this many requests a second (5)")
    parser.add_argument("--dry-run", action="store_true", help="grade and report, write no score")
    parser.add_argument("--format", choices=tuple(RENDERERS), default="table", help="report format")
    parser.add_argument("--out", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report to FILE")
    parser.add_argument(
        "--store",
        metavar="PATH",
        help="also write the verdicts to this SQLite store, and keep there the cursor --since last reads",
    )
    parser.set_defaults(run=run)


def when_ns(text: str, now_ns: int) -> int:
    """A duration ago (``24h``) or an ISO 8601 time (naive is UTC), in nanoseconds."""
    match = _DURATION.fullmatch(text.strip())
    if match:
        return now_ns - int(float(match.group(1)) * _UNIT_S[match.group(2)] * 1e9)
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise SettingError(f"{text!r} is neither a duration (24h) nor an ISO 8601 time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1_000


def _project() -> tuple[str, str, str]:
    from otel_traj.sinks.langfuse import DEFAULT_BASE_URL

    public_key, secret_key = env.LANGFUSE_PUBLIC_KEY.read(), env.LANGFUSE_SECRET_KEY.read()
    if not public_key or not secret_key:
        raise SettingError("LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY are required")
    url = env.LANGFUSE_BASE_URL.read() or env.LANGFUSE_HOST.read() or DEFAULT_BASE_URL
    return url.rstrip("/"), public_key, secret_key


def _window(args: argparse.Namespace, project: str) -> tuple[int | None, int | None]:
    now = time.time_ns()
    since = None
    if args.since == "last":
        if not args.store:
            raise SettingError("--since last needs --store (where the cursor is kept)")
        from otel_traj.sinks.store_cursors import read_cursor

        try:
            since = read_cursor(args.store, SOURCE, project)
        except (StoreError, sqlite3.Error) as exc:
            raise SettingError(f"--store: {exc}") from None
    elif args.since:
        since = when_ns(args.since, now)
    until = when_ns(args.until, now) if args.until else None
    if args.limit is not None and args.limit < 1:
        raise SettingError(f"--limit {args.limit}: must be at least 1")
    return since, until


def _read(
    args: argparse.Namespace,
    policy: Any,
    url: str,
    keys: tuple[str, str],
    since: int | None,
    until: int | None,
) -> Backfilled:
    import httpx

    from otel_traj.backfill.http import PoliteClient
    from otel_traj.backfill.langfuse import LangfuseReader, TraceFilter
    from otel_traj.backfill.run import read_langfuse_runs
    from otel_traj.offline import offline_config

    client = PoliteClient(url, auth=httpx.BasicAuth(*keys), rps=args.rps)
    query = TraceFilter(
        since_ns=since,
        until_ns=until,
        name=args.name,
        tags=tuple(args.tag),
        user_id=args.user_id,
        session_id=args.session_id,
        environment=args.environment,
    )
    try:
        return read_langfuse_runs(
            LangfuseReader(client), query, limit=args.limit, config=offline_config(policy)
        )
    finally:
        client.close()


def _source(args: argparse.Namespace) -> str | None:
    """The OTLP/JSON URL template when the runs come from such a backend, else None (Langfuse)."""
    source = args.source
    if source == [SOURCE]:
        for flag, given in (("--trace-ids", args.trace_ids), ("--search", args.search)):
            if given:
                raise SettingError(f"{flag} goes with --from {OTLP_JSON} URL")
        return None
    if len(source) != 2 or source[0] != OTLP_JSON:
        raise SettingError(f"--from {' '.join(source)}: expected `{SOURCE}` or `{OTLP_JSON} URL`")
    if bool(args.trace_ids) == bool(args.search):
        raise SettingError(f"--from {OTLP_JSON} needs one of --trace-ids FILE and --search URL")
    given = _flags(args, _LANGFUSE_ONLY)
    if given:
        raise SettingError(f"{given}: Langfuse's only")
    window = _flags(args, _WINDOW)
    if window and not args.search:
        raise SettingError(f"{window}: a window goes with --search; --trace-ids selects the traces")
    if args.since == "last":
        raise SettingError("--since last: Langfuse's only (give a duration or a time)")
    return str(source[1])


def _flags(args: argparse.Namespace, names: tuple[str, ...]) -> str:
    """The flags of ``names`` given on the command line, as they are spelt there."""
    return ", ".join(f"--{name.replace('_', '-')}" for name in names if getattr(args, name))


def run(args: argparse.Namespace) -> int:
    try:
        policy, _ = load_inputs(args.policy, None)
    except InputError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INPUT
    try:
        if args.rps <= 0:
            raise SettingError(f"--rps {args.rps}: must be positive")
        template = _source(args)
    except SettingError as exc:
        print(f"otel-traj: {exc}", file=sys.stderr)
        return EXIT_INPUT
    if template is not None:
        from otel_traj.cli.backfill_otlp import run_otlp_json

        return run_otlp_json(args, policy, template)
    try:
        url, public_key, secret_key = _project()
        project = f"{url} {public_key}"
        since, until = _window(args, project)
    except SettingError as exc:
        print(f"otel-traj: {exc}", file=sys.stderr)
        return EXIT_INPUT
    outputs = sinks(args, policy, langfuse=not args.dry_run)
    if outputs is None:
        return EXIT_INPUT
    try:
        read = _read(args, policy, url, (public_key, secret_key), since, until)
    except BaseException:
        for sink in outputs.sinks:
            sink.shutdown(0)
        raise
    from otel_traj.offline import grade_runs

    graded = grade_runs(read.runs, policy=policy, sinks=outputs.sinks)
    delivered = summarize(outputs, read, graded)
    if delivered and args.store and not args.dry_run and read.cursor_ns is not None:
        from otel_traj.sinks.store_cursors import write_cursor

        write_cursor(args.store, SOURCE, project, read.cursor_ns)
    code = report(args, graded)
    if code != EXIT_OK and code != EXIT_FAILED:
        return code
    return EXIT_INPUT if read.failure else code


def sinks(args: argparse.Namespace, policy: Any, *, langfuse: bool) -> SinkSet | None:
    """The sinks a backfill delivers to (``--store``, and Langfuse unless not asked); None when one
    cannot be built (why is printed)."""
    try:
        return build_sinks(
            Outputs(store=args.store, langfuse=langfuse),
            policy=policy,
            redact=policy.is_sensitive if policy is not None else None,
        )
    except OutputError as exc:
        print(f"otel-traj: --{exc.output}: {exc}", file=sys.stderr)
    except (StoreError, OSError, sqlite3.Error) as exc:
        print(f"otel-traj: --store: {exc}", file=sys.stderr)
    return None


def summarize(outputs: SinkSet, read: Backfilled, graded: Graded) -> bool:
    """Counts on stderr; True when every score and verdict given to the sinks was delivered."""
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(read.skipped.items()) if n) or "none"
    print(
        f"otel-traj: backfill: {read.listed} traces listed, {read.read} read, {len(graded.verdicts)} runs "
        f"graded ({read.incomplete} not fully read), skipped: {skipped}",
        file=sys.stderr,
    )
    if read.failure:
        print(f"otel-traj: backfill: reading stopped: {read.failure}", file=sys.stderr)
    delivered = True
    if outputs.langfuse is not None:
        report = outputs.langfuse.report()
        print(f"otel-traj: langfuse: {report.summary()}", file=sys.stderr)
        delivered = not (report.rejected or report.dropped or report.pending)
    if outputs.store is not None:
        stats = outputs.store.stats.snapshot()
        lost = sum(stats.dropped.values()) + sum(stats.sink_errors.values())
        print(
            f"otel-traj: store: {outputs.store.written} verdicts written to {outputs.store.path}",
            file=sys.stderr,
        )
        delivered = delivered and not lost
    return delivered
