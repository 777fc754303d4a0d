"""``otel-traj backfill --from otlp-json URL --trace-ids FILE|--search URL``: grade the traces FILE
names or the backend's search answers (``otel_traj.backfill.search``), read from a backend that
answers a trace id with OTLP/JSON (``otel_traj.backfill.otlp``), and report as ``grade`` does. Exit
codes as the Langfuse backfill's; a search that cannot be had exits 2 before anything is read."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from otel_traj.cli.backfill import sinks, summarize, when_ns
from otel_traj.cli.grade import EXIT_FAILED, EXIT_INPUT, EXIT_OK, report


def _settings(args: argparse.Namespace, template: str) -> tuple[str, str]:
    from otel_traj.backfill.otlp import split_template

    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit {args.limit}: must be at least 1")
    return split_template(template)


def _trace_ids(args: argparse.Namespace) -> list[str]:
    """The ids of the traces to read: the file's, or those the search answers (``ReadError`` when
    it cannot be had)."""
    from otel_traj.backfill.otlp import read_trace_ids

    if args.trace_ids:
        try:
            return read_trace_ids(args.trace_ids)
        except OSError as exc:
            raise ValueError(f"--trace-ids: {exc}") from None
    from otel_traj.backfill.http import PoliteClient
    from otel_traj.backfill.otlp import split_url
    from otel_traj.backfill.search import fill_window, search_trace_ids, window_placeholders

    unused = [name for name in ("since", "until") if getattr(args, name)]
    unused = [name for name in unused if name not in window_placeholders(args.search)]
    if unused:
        name = unused[0]
        raise ValueError(f"--{name}: the search URL holds no {{{name}}} or {{{name}_rfc3339}} to put it in")
    now = time.time_ns()
    since = when_ns(args.since, now) if args.since else None
    until = when_ns(args.until, now) if args.until else None
    url = fill_window(args.search, since, until)
    base, path = split_url(url)
    client = PoliteClient(base, rps=args.rps)
    try:
        return search_trace_ids(client, path)
    finally:
        client.close()


def run_otlp_json(args: argparse.Namespace, policy: Any, template: str) -> int:
    from otel_traj.backfill.http import PoliteClient, ReadError
    from otel_traj.backfill.otlp import OtlpJsonReader, read_otlp_runs
    from otel_traj.offline import grade_runs, offline_config

    try:
        base, path = _settings(args, template)
        ids = _trace_ids(args)
    except ValueError as exc:
        print(f"otel-traj: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except ReadError as exc:
        print(f"otel-traj: --search: {exc}", file=sys.stderr)
        return EXIT_INPUT
    outputs = sinks(args, policy, langfuse=False)
    if outputs is None:
        return EXIT_INPUT
    client = PoliteClient(base, rps=args.rps)
    try:
        read = read_otlp_runs(
            OtlpJsonReader(client, path), ids, limit=args.limit, config=offline_config(policy)
        )
    except BaseException:
        for sink in outputs.sinks:
            sink.shutdown(0)
        raise
    finally:
        client.close()
    graded = grade_runs(read.runs, policy=policy, sinks=outputs.sinks)
    summarize(outputs, read, graded)
    code = report(args, graded)
    if code not in (EXIT_OK, EXIT_FAILED):
        return code
    return EXIT_INPUT if read.failure else code
