"""Where ``otel-traj grade``'s time goes on a corpus of at least 500 recorded runs.

The corpus is every OTLP/JSON recording under ``tests/fixtures/real`` written ``--copies`` times into
a temporary directory, each copy's trace ids rewritten (their first byte) so that no copy is read as
a duplicate of another. Each round times, in one process, the stages of ``grade`` as
``otel_traj.offline`` runs them: reading the files into SpanViews (``read_trace_inputs``), reading
spans into steps and assembling the runs (``trajectories_from_views``), and grading them with the
example policy (``grade_runs``, no sink); plus the JSON decoding of the same files alone, with the
standard library (what reading uses) and with orjson, the parser the package already depends on.
Then the whole path (``read_runs`` and ``grade_runs``) with one job and with ``--jobs`` worker
processes (default one per core), alternately first in a round, in wall time (a pool's start-up
counted) and in CPU time of the process and its workers; and the parallelism the machine gives at
that moment: the CPU time as many processes doing nothing but arithmetic get per second of wall
time (on a shared machine, two cores may give one and a half, or less). Medians over the rounds,
with their spread.

    python benchmarks/offline.py [--copies N] [--rounds R] [--jobs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.offline import grade_runs, offline_config, read_runs, trajectories_from_views
from otel_traj.offline_read import job_count
from otel_traj.policy import load_policy

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
STAGES = (
    "read_ms",
    "assemble_ms",
    "grade_ms",
    "json_decode_ms",
    "orjson_decode_ms",
    "jobs_1_ms",
    "jobs_n_ms",
    "jobs_1_cpu_ms",
    "jobs_n_cpu_ms",
)
_TRACE_ID = re.compile(r'("traceId"\s*:\s*")[0-9a-fA-F]{2}')


def write_corpus(directory: Path, copies: int) -> int:
    """Every OTLP/JSON recording ``copies`` times under ``directory``; the number of files."""
    written = 0
    for copy in range(copies):
        prefix = rf"\g<1>{copy:02x}"
        for path in sorted(REAL.glob("*/*.otlp.json")):
            text = _TRACE_ID.sub(prefix, path.read_text())
            (directory / f"{copy}-{path.parent.name}-{path.name}").write_text(text)
            written += 1
    return written


def _ms(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = work()
    return (time.perf_counter() - start) * 1000, result


def _cpu_ms() -> float:
    """CPU time of this process and of its children that have ended."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime) * 1000


def _spin(count: int) -> float:
    start = time.process_time()
    total = 0
    for i in range(count):
        total += i
    return time.process_time() - start


def cores_free(jobs: int, count: int = 5_000_000) -> float:
    """CPU seconds ``jobs`` processes doing arithmetic get per second of wall time."""
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        start = time.perf_counter()
        cpu = sum(pool.map(_spin, [count] * jobs))
        return cpu / (time.perf_counter() - start)


def one_round(directory: Path, jobs: int, jobs_first: bool) -> dict[str, float]:
    policy = load_policy(POLICY)
    timed: dict[str, float] = {}
    for count in (jobs, 1) if jobs_first else (1, jobs):
        cpu = _cpu_ms()
        timed[f"jobs_{count}_ms"], _ = _ms(
            lambda n=count: grade_runs(read_runs([directory], policy=policy, jobs=n), policy=policy)
        )
        timed[f"jobs_{count}_cpu_ms"] = _cpu_ms() - cpu
    read_ms, inputs = _ms(lambda: read_trace_inputs([directory]))
    assemble_ms, runs = _ms(lambda: trajectories_from_views(inputs.views, offline_config(policy)))
    grade_ms, graded = _ms(lambda: grade_runs(runs, policy=policy))
    files = [p.read_bytes() for p in sorted(directory.iterdir())]
    decoder = json.JSONDecoder()
    json_ms, _ = _ms(lambda: [decoder.raw_decode(data.decode()) for data in files])
    orjson_ms, _ = _ms(lambda: [orjson.loads(data) for data in files])
    return {
        "runs": len(graded.verdicts),
        "spans": len(inputs.views),
        "read_ms": read_ms,
        "assemble_ms": assemble_ms,
        "grade_ms": grade_ms,
        "json_decode_ms": json_ms,
        "orjson_decode_ms": orjson_ms,
        "jobs_1_ms": timed["jobs_1_ms"],
        "jobs_n_ms": timed[f"jobs_{jobs}_ms"],
        "jobs_1_cpu_ms": timed["jobs_1_cpu_ms"],
        "jobs_n_cpu_ms": timed[f"jobs_{jobs}_cpu_ms"],
        "cores_free": cores_free(jobs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=5, help="copies of the recordings (5: 580 runs)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--jobs", type=int, default=0, help="worker processes to compare with one (0: one per core)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        files = write_corpus(directory, args.copies)
        megabytes = sum(p.stat().st_size for p in directory.iterdir()) / 2**20
        jobs = job_count(args.jobs)
        rounds = [one_round(directory, jobs, i % 2 == 1) for i in range(args.rounds)]
    result: dict[str, Any] = {"files": files, "mib": round(megabytes, 1), "runs": rounds[0]["runs"]}
    result["spans"] = rounds[0]["spans"]
    result["jobs"] = jobs
    for key in (*STAGES, "cores_free"):
        values = [r[key] for r in rounds]
        result[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{files} files, {result['mib']} MiB, {result['runs']} runs, {result['spans']} spans")
    print(f"{'stage':<18} {'median ms':>10} {'min':>8} {'max':>8}")
    for key in STAGES:
        row = result[key]
        name = key.removesuffix("_ms").replace("jobs_n", f"jobs_{jobs}")
        print(f"{name:<18} {row['median']:>10.0f} {row['min']:>8.0f} {row['max']:>8.0f}")
    speedup = statistics.median(r["jobs_1_ms"] / r["jobs_n_ms"] for r in rounds)
    free = result["cores_free"]
    print(f"jobs 1 / jobs {jobs}: {speedup:.2f}x (median of the rounds' ratios)")
    print(f"cores free for {jobs} processes: {free['median']:.2f} ({free['min']:.2f}-{free['max']:.2f})")


if __name__ == "__main__":
    main()
