"""The store: verdicts written per second, and ``report`` and ``gate --store`` over many stored runs,
on SQLite and on PostgreSQL, each figure with PostgreSQL's ratio to SQLite measured in the same run.

The verdicts are the recorded framework runs of ``tests/fixtures/real`` graded with
``examples/policies/support_agent.yaml`` (about 5 KB of verdict JSON each), given new trace ids,
start times over the last seven days and one of 50 service versions.

- writes: ``--writes`` verdicts exported at once to a ``SqliteSink`` and to a ``PostgresSink``, one
  per batch size, timed from the first ``export`` to ``force_flush``'s return (a fresh store each);
- reads: a store of ``--runs`` runs (200,000 by default; the fleet-store issue's figure is 1,000,000)
  is filled in bulk, not through a sink, which would take minutes more: each run's rows are made by
  the store's own ``prepare``, then written by ``write_prepared`` in transactions of 5,000 runs
  (SQLite) or with ``COPY`` (PostgreSQL), and the tables analyzed. Then ``otel-traj report`` (the
  newest 1,000 runs; runs where ``scope`` failed in the last hour; one agent's unsafe runs in the
  last day) and ``otel-traj gate --store`` (two service versions of the last day: a few hundred runs
  a side at 200,000 runs) run in this process, the median of ``--rounds``.

PostgreSQL is a throwaway cluster (Debian's ``postgresql`` server binaries: ``initdb`` and
``pg_ctl`` into a temporary directory, a free loopback port, ``fsync=off``); without them, or
without psycopg, the benchmark says so and exits 0.

    python benchmarks/store.py [--writes N] [--runs N] [--rounds R] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import importlib.util
import io
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from otel_traj.adapters import read_trace_file
from otel_traj.cli import main as cli
from otel_traj.grader import Grader
from otel_traj.offline import trajectories_from_views
from otel_traj.policy import load_policy
from otel_traj.sinks.store import Prepared, SqliteSink, connect, prepare, write_prepared
from otel_traj.sinks.store_postgres import PostgresSink
from otel_traj.sinks.store_postgres_schema import connect as pg_connect
from otel_traj.verdict import Verdict

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
INSTALL = "Debian's postgresql package: apt-get install postgresql"
DRIVER = "psycopg: pip install 'otel-traj[postgres]'"
BATCH_SIZES = (10, 100, 500)
VERSIONS = 50
DAY_NS = 86_400 * 10**9
FILL_CHUNK = 5_000
_TRAJECTORY_COLUMNS = (
    "trace_id, agent, service_name, service_version, conversation_id, outcome, score, policy_version, "
    "complete, started_ns, ended_ns, graded_ns, verdict"
)
_FAILED_COLUMNS = "trace_id, position, name, status, severity, reason, steps"


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found or (candidates[-1] if candidates else None)


@contextlib.contextmanager
def postgres_cluster() -> Iterator[Callable[[], str] | None]:
    """A function giving a new database's URL on a throwaway cluster; None without the binaries."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        yield None
        return
    import psycopg

    directory = Path(tempfile.mkdtemp(prefix="otel-traj-bench-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root
        shutil.chown(directory, "nobody")
        as_user = ["runuser", "-u", "nobody", "--"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = str(directory / "data")

    def run(*args: str) -> None:
        subprocess.run([*as_user, *args], check=True, capture_output=True, timeout=120)

    run(initdb, "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
    options = f"-k {directory} -c listen_addresses=127.0.0.1 -p {port} -c fsync=off"
    run(pg_ctl, "-D", data, "-l", str(directory / "log"), "-w", "-o", options, "start")
    databases = iter(range(1_000_000))

    def database() -> str:
        name = f"bench_{next(databases)}"
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}".encode())
        return f"postgresql://postgres@127.0.0.1:{port}/{name}"

    try:
        yield database
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            run(pg_ctl, "-D", data, "-m", "immediate", "-w", "stop")
        shutil.rmtree(directory, ignore_errors=True)


def recorded_verdicts() -> list[Verdict]:
    grader = Grader(load_policy(POLICY))
    return [
        grader.grade(trajectory)
        for path in sorted(REAL.glob("*/*.otlp.pb"))
        for trajectory in trajectories_from_views(read_trace_file(path).views)
        if trajectory.agent == "support_agent"
    ]


def synthetic(templates: Sequence[Verdict], count: int, now_ns: int, first_id: int = 1) -> Iterator[Verdict]:
    """``count`` runs made of ``templates``: new trace ids, started over the last seven days (the
    newest last), one of ``VERSIONS`` service versions."""
    for i in range(count):
        template = templates[i % len(templates)]
        traj = template.trajectory
        start = now_ns - 7 * DAY_NS + (7 * DAY_NS * i) // max(count, 1)
        trajectory = replace(
            traj,
            trace_id=first_id + i,
            start_ns=start,
            end_ns=start + (traj.end_ns - traj.start_ns),
            service_version=f"1.0.{i % VERSIONS}",
        )
        yield replace(template, trajectory=trajectory, graded_at_ns=start + 10**9)


# -- writes -------------------------------------------------------------------------------------------


def write_rate(sink: SqliteSink | PostgresSink, verdicts: Sequence[Verdict]) -> float:
    """Verdicts per second from the first ``export`` to ``force_flush``'s return."""
    started = time.perf_counter()
    for verdict in verdicts:
        sink.export(verdict)
    assert sink.force_flush(timeout_millis=600_000), "the store did not take the verdicts"
    elapsed = time.perf_counter() - started
    sink.shutdown()
    assert not sink.stats.snapshot().dropped, sink.stats.snapshot().dropped
    return len(verdicts) / elapsed


def bench_writes(verdicts: Sequence[Verdict], database: Callable[[], str], directory: Path) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for size in BATCH_SIZES:
        path = directory / f"writes-{size}.db"
        queue = len(verdicts)
        sqlite = write_rate(SqliteSink(path=path, batch_size=size, max_queue=queue), verdicts)
        postgres = write_rate(PostgresSink(url=database(), batch_size=size, max_queue=queue), verdicts)
        rows[str(size)] = {"sqlite_per_s": sqlite, "postgres_per_s": postgres}
    return rows


# -- a large store ------------------------------------------------------------------------------------


def _chunks(verdicts: Iterator[Verdict]) -> Iterator[list[Prepared]]:
    chunk: list[Prepared] = []
    for verdict in verdicts:
        chunk.append(prepare(verdict, None))
        if len(chunk) == FILL_CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def fill_sqlite(path: str, verdicts: Iterator[Verdict]) -> None:
    conn = connect(path)
    try:
        for chunk in _chunks(verdicts):
            write_prepared(conn, chunk)
        conn.execute("ANALYZE")
    finally:
        conn.close()


def fill_postgres(url: str, verdicts: Iterator[Verdict]) -> None:
    conn = pg_connect(url)
    try:
        for chunk in _chunks(verdicts):
            with conn.transaction(), conn.cursor() as cur:
                with cur.copy(f"COPY trajectories ({_TRAJECTORY_COLUMNS}) FROM STDIN".encode()) as copy:
                    for row, _ in chunk:
                        copy.write_row(row)
                with cur.copy(f"COPY failed_checks ({_FAILED_COLUMNS}) FROM STDIN".encode()) as copy:
                    for _, failed in chunk:
                        for check in failed:
                            copy.write_row(check)
        conn.autocommit = True
        conn.execute(b"ANALYZE")
    finally:
        conn.close()


def _median_ms(argv: Sequence[str], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = cli(list(argv))
        samples.append((time.perf_counter() - started) * 1000)
        assert code in (0, 1), f"{' '.join(argv)} exited {code}"
    return statistics.median(samples)


def read_commands(store: str) -> dict[str, list[str]]:
    report = ["report", "--store", store, "--format", "json", "--limit", "1000"]
    return {
        "report, newest 1,000": report,
        "report --failed scope --since 1h": [*report, "--failed", "scope", "--since", "1h"],
        "report one agent unsafe, 1 day": [
            *report,
            *("--agent", "support_agent", "--outcome", "unsafe", "--since", "24h"),
        ],
        "gate --store, two versions, 1 day": [
            *("gate", "--store", store, "--since", "24h", "--format", "json"),
            *("--baseline-where", "service_version=1.0.7", "--candidate-where", "service_version=1.0.8"),
        ],
    }


def bench_reads(
    templates: Sequence[Verdict], runs: int, rounds: int, database: Callable[[], str], directory: Path
) -> dict[str, Any]:
    now_ns = time.time_ns()
    sqlite, postgres = str(directory / "runs.db"), database()
    fill: dict[str, float] = {}
    for name, store, filler in (("sqlite", sqlite, fill_sqlite), ("postgres", postgres, fill_postgres)):
        started = time.perf_counter()
        filler(store, synthetic(templates, runs, now_ns))
        fill[f"{name}_per_s"] = runs / (time.perf_counter() - started)
    latency = {
        label: {"sqlite_ms": _median_ms(on_sqlite, rounds), "postgres_ms": _median_ms(on_postgres, rounds)}
        for (label, on_sqlite), on_postgres in zip(
            read_commands(sqlite).items(), read_commands(postgres).values(), strict=True
        )
    }
    return {"runs": runs, "fill": fill, "latency": latency}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()
    if importlib.util.find_spec("psycopg") is None:
        print(f"store benchmark skipped: PostgreSQL's driver is not installed ({DRIVER})")
        return
    with postgres_cluster() as database, tempfile.TemporaryDirectory() as tmp:
        if database is None:
            print(f"store benchmark skipped: PostgreSQL's server is not installed ({INSTALL})")
            return
        templates = recorded_verdicts()
        writes = bench_writes(list(synthetic(templates, args.writes, time.time_ns())), database, Path(tmp))
        reads = bench_reads(templates, args.runs, args.rounds, database, Path(tmp))
    if args.json:
        print(json.dumps({"writes": writes, "reads": reads}, indent=2))
        return
    size = statistics.mean(len(prepare(v, None)[0][-1]) for v in templates) / 1024
    print(f"verdicts written per second ({args.writes:,} exported at once, {size:.1f} KB of JSON each)")
    print(f"  {'batch size':12} {'SQLite':>10} {'PostgreSQL':>12} {'PG/SQLite':>10}")
    for batch, row in writes.items():
        ratio = row["postgres_per_s"] / row["sqlite_per_s"]
        print(f"  {batch:12} {row['sqlite_per_s']:10,.0f} {row['postgres_per_s']:12,.0f} {ratio:9.2f}x")
    fill = reads["fill"]
    print(
        f"\n{reads['runs']:,} stored runs, filled in bulk: SQLite {fill['sqlite_per_s']:,.0f} runs/s"
        f" (write_prepared), PostgreSQL {fill['postgres_per_s']:,.0f} runs/s (COPY)"
    )
    rounds = f"median of {args.rounds} rounds"
    print(f"  {rounds:36} {'SQLite':>10} {'PostgreSQL':>12} {'PG/SQLite':>10}")
    for label, row in reads["latency"].items():
        ratio = row["postgres_ms"] / row["sqlite_ms"]
        print(f"  {label:36} {row['sqlite_ms']:8.0f} ms {row['postgres_ms']:10.0f} ms {ratio:9.2f}x")


if __name__ == "__main__":
    main()
