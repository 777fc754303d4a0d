"""The fleet store on a real PostgreSQL server (a throwaway cluster, ``tests/postgres_server.py``):
replicas writing one database, a run delivered twice stored once, the server stopped and restarted
under load with nothing lost within the queue, what exceeds the queue counted, retention, the
schema migrated once by replicas starting together, and ``report`` reading it as it reads SQLite."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import psycopg
import pytest

from otel_traj.cli import main
from otel_traj.sinks.store import SqliteSink
from otel_traj.sinks.store_postgres import PostgresSink
from otel_traj.sinks.store_postgres_schema import connect, is_postgres, shown
from otel_traj.sinks.store_schema import SCHEMA_VERSION, StoreError
from tests.postgres_server import PostgresServer
from tests.store_helpers import verdict


def count(url: str, sql: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(sql.encode()).fetchone()
        assert row is not None
        return int(row[0])


def test_urls_select_postgresql_and_paths_stay_sqlite() -> None:
    assert is_postgres("postgresql://u:p@db:5432/traj")
    assert is_postgres("postgres://db/traj")
    assert not is_postgres("otel-traj.db")
    assert not is_postgres("/var/lib/otel-traj/postgresql.db")
    assert shown("postgresql://u:secret@db:5432/traj") == "postgresql://u:***@db:5432/traj"


def test_two_replicas_write_one_database_and_a_duplicate_delivery_is_stored_once(postgres_url: str) -> None:
    first, second = PostgresSink(url=postgres_url), PostgresSink(url=postgres_url)
    for i in range(1, 301):
        first.export(verdict(i, outcome="unsafe" if i % 3 == 0 else "pass"))
    # The second replica gets every third run again (a Collector retry, a replay), and runs of its own.
    for i in range(3, 301, 3):
        second.export(verdict(i, outcome="unsafe"))
    for i in range(301, 401):
        second.export(verdict(i))
    assert first.force_flush() and second.force_flush()
    first.shutdown()
    second.shutdown()
    assert first.written == 300 and second.written == 200
    assert count(postgres_url, "SELECT count(*) FROM trajectories") == 400
    assert count(postgres_url, "SELECT count(DISTINCT trace_id) FROM trajectories") == 400
    # Each unsafe run keeps one failed scope check, however often it was delivered.
    assert count(postgres_url, "SELECT count(*) FROM failed_checks") == 100
    assert count(postgres_url, "SELECT count(*) FROM failed_checks WHERE name = 'scope'") == 100
    assert first.stats.snapshot().dropped == {} and second.stats.snapshot().dropped == {}


def test_replicas_starting_together_migrate_the_schema_once(postgres_url: str) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def start() -> None:
        try:
            barrier.wait()
            connect(postgres_url).close()
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert count(postgres_url, "SELECT count(*) FROM otel_traj_schema") == 1
    assert count(postgres_url, "SELECT max(version) FROM otel_traj_schema") == SCHEMA_VERSION


def test_a_newer_schema_is_refused_and_a_reader_needs_a_store(postgres_url: str) -> None:
    with pytest.raises(StoreError, match="no otel-traj store"):
        connect(postgres_url, readonly=True)
    connect(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE otel_traj_schema SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1} is newer"):
        connect(postgres_url)


def test_the_server_stopped_and_restarted_under_load_loses_nothing_within_the_queue(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    sink = PostgresSink(url=postgres_url, max_queue=5_000, batch_size=50)
    for i in range(1, 201):
        sink.export(verdict(i))
    assert sink.force_flush()
    postgres_server.stop()
    try:
        for i in range(201, 1201):
            sink.export(verdict(i))
        # The writer finds the server gone: nothing is written, nothing dropped, the state says so.
        assert not sink.force_flush(timeout_millis=300)
        state = sink.state()
        assert not state.up and state.waiting > 0
        assert state.describe().startswith("store: down for ")
    finally:
        postgres_server.start()
    for i in range(1201, 1401):
        sink.export(verdict(i))
    assert sink.force_flush(timeout_millis=60_000)
    sink.shutdown()
    assert sink.state().up
    assert sink.stats.snapshot().dropped == {}
    assert count(postgres_url, "SELECT count(*) FROM trajectories") == 1400


def test_what_exceeds_the_queue_while_the_server_is_away_is_counted_as_store() -> None:
    with PostgresServerAway() as url:
        sink = PostgresSink(url=url, max_queue=10, batch_size=5)
        assert not sink.state().up
        for i in range(1, 41):
            sink.export(verdict(i))
        sink.shutdown(timeout_millis=200)
    dropped = sink.stats.snapshot().dropped
    assert dropped.get("store", 0) >= 40 - 10 - 5
    assert dropped.get("store", 0) + dropped.get("store_shutdown", 0) == 40


class PostgresServerAway:
    """The URL of a port nothing listens on."""

    def __enter__(self) -> str:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        return f"postgresql://postgres@127.0.0.1:{port}/none?connect_timeout=1"

    def __exit__(self, *exc: object) -> None:
        return None


def test_retention_deletes_old_runs_with_their_failed_checks(postgres_url: str) -> None:
    now_s = int(time.time())
    sink = PostgresSink(url=postgres_url, retention_s=3600)
    for i in range(1, 51):
        sink.export(verdict(i, outcome="unsafe", start_s=now_s - 7200))
    for i in range(51, 61):
        sink.export(verdict(i, outcome="unsafe", start_s=now_s - 60))
    assert sink.force_flush()
    sink.shutdown()
    assert sink.pruned == 50
    assert count(postgres_url, "SELECT count(*) FROM trajectories") == 10
    assert count(postgres_url, "SELECT count(*) FROM failed_checks") == 10


def test_text_postgresql_refuses_is_stored_as_sqlite_keeps_it(postgres_url: str) -> None:
    bad = verdict(1, agent="agent\x00with nul \ud800")
    sink = PostgresSink(url=postgres_url)
    sink.export(bad)
    assert sink.force_flush()
    sink.shutdown()
    assert sink.stats.snapshot().dropped == {}
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute("SELECT agent, verdict FROM trajectories").fetchone()
    assert row is not None
    # The column as SQLite's (each byte of the surrogate replaced), NUL replaced too; the JSON exact.
    assert row[0] == "agent\ufffdwith nul " + "\ufffd" * 3
    assert json.loads(row[1])["agent"] == "agent\x00with nul \ud800"


def _both_stores(tmp_path: Path, url: str) -> list[str]:
    sqlite_path = tmp_path / "verdicts.db"
    sinks = [SqliteSink(path=sqlite_path), PostgresSink(url=url)]
    for sink in sinks:
        for i in range(1, 7):
            sink.export(
                verdict(
                    i,
                    agent="support_agent" if i % 2 else "billing",
                    outcome="unsafe" if i % 3 == 0 else "pass",
                    start_s=100 + i,
                )
            )
        sink.shutdown()
    return [str(sqlite_path), url]


def test_report_reads_postgresql_as_it_reads_sqlite(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    for store in _both_stores(tmp_path, postgres_url):
        runs = []
        for flags in (
            [],
            ["--failed", "scope"],
            ["--agent", "billing", "--outcome", "pass"],
            ["--limit", "2"],
        ):
            assert main(["report", "--store", store, "--format", "json", *flags]) == 0
            runs.append([v["trace_id"] for v in json.loads(capsys.readouterr().out)["trajectories"]])
        assert main(["report", "--store", store]) == 0
        runs.append(capsys.readouterr().out.splitlines()[-1])
        outputs.append(runs)
    assert outputs[0] == outputs[1]
    assert outputs[1][1] == [f"{3:032x}", f"{6:032x}"]
    assert outputs[1][-1] == "6 trajectories: 2 unsafe, 4 pass"


def test_report_on_an_unreachable_server_exits_2_without_the_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with PostgresServerAway() as url:
        secret = url.replace("postgres@", "postgres:hunter2@")
        assert main(["report", "--store", secret]) == 2
    err = capsys.readouterr().err
    assert err.startswith("otel-traj: ")
    assert "hunter2" not in err
