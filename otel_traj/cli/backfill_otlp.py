"""``otel-traj backfill --from otlp-json URL --trace-ids FILE``: grade the traces FILE names, read
from a backend that answers a trace id with OTLP/JSON (``otel_traj.backfill.otlp``), and report as
``grade`` does. Exit codes as the Langfuse backfill's."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from otel_traj.cli.backfill import sinks, summarize
from otel_traj.cli.grade import EXIT_FAILED, EXIT_INPUT, EXIT_OK, report


def _settings(args: argparse.Namespace, template: str) -> tuple[str, str, list[str]]:
    from otel_traj.backfill.otlp import read_trace_ids, split_template

    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit {args.limit}: must be at least 1")
    base, path = split_template(template)
    try:
        ids = read_trace_ids(args.trace_ids)
    except OSError as exc:
        raise ValueError(f"--trace-ids: {exc}") from None
    return base, path, ids


def run_otlp_json(args: argparse.Namespace, policy: Any, template: str) -> int:
    from otel_traj.backfill.http import PoliteClient
    from otel_traj.backfill.otlp import OtlpJsonReader, read_otlp_runs
    from otel_traj.offline import grade_runs, offline_config

    try:
        base, path, ids = _settings(args, template)
    except ValueError as exc:
        print(f"otel-traj: {exc}", file=sys.stderr)
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
