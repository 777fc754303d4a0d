"""The SQLite verdict store and SqliteSink, in-process."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from otel_traj.cli.report import parse_since
from otel_traj.serialize import verdict_to_dict
from otel_traj.sinks import store
from otel_traj.sinks.store import (
    SCHEMA_VERSION,
    Prepared,
    Query,
    SqliteSink,
    StoreError,
    connect,
    read_verdicts,
    write_verdicts,
)
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Outcome, Verdict

NS = 1_000_000_000
VARIABLES = sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER


@pytest.fixture
def open_sink() -> Iterator[Callable[..., SqliteSink]]:
    """Starts sinks that are shut down after the test, whatever it asserted."""
    started: list[SqliteSink] = []

    def start(**kwargs: Any) -> SqliteSink:
        started.append(SqliteSink(**kwargs))
        return started[-1]

    yield start
    for sink in started:
        sink.shutdown(timeout_millis=5_000)


def verdict(
    trace_id: int, agent: str = "support_agent", outcome: Outcome = "pass", start_s: int = 100
) -> Verdict:
    traj = Trajectory(
        trace_id=trace_id, agent=agent, service_name="svc", start_ns=start_s * NS, end_ns=(start_s + 2) * NS
    )
    checks = [
        CheckResult(
            "scope",
            "fail" if outcome == "unsafe" else "pass",
            "critical",
            "customer C028",
            ("00000000000000aa",),
        ),
        CheckResult("budget", "pass", "warning", "within budget"),
    ]
    return Verdict(
        traj, checks, outcome, 0.5 if outcome == "unsafe" else 1.0, "1@abc", graded_at_ns=start_s * NS + 5
    )


def test_round_trip_has_the_grade_json_shape(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.db")
    v = verdict(1, outcome="unsafe")
    write_verdicts(conn, [v])
    (stored,) = read_verdicts(conn)
    assert stored == json.loads(json.dumps(verdict_to_dict(v)))
    row = conn.execute(
        "SELECT agent, service_name, outcome, score, policy_version, complete, started_ns, ended_ns, "
        "graded_ns FROM trajectories"
    ).fetchone()
    assert row == ("support_agent", "svc", "unsafe", 0.5, "1@abc", 1, 100 * NS, 102 * NS, 100 * NS + 5)
    checks = conn.execute(
        "SELECT name, status, severity, steps FROM check_results ORDER BY position"
    ).fetchall()
    assert checks == [
        ("scope", "fail", "critical", '["00000000000000aa"]'),
        ("budget", "pass", "warning", "[]"),
    ]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_only_failed_checks_are_rows_and_report_failed_reads_their_index(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.db")
    write_verdicts(conn, [verdict(1, outcome="unsafe"), verdict(2)])
    assert conn.execute("SELECT trace_id, position, name, status, steps FROM failed_checks").fetchall() == [
        ("00000000000000000000000000000001", 0, "scope", "fail", '["00000000000000aa"]')
    ]
    # Every check, passes included, as rows of the view over the verdicts.
    assert conn.execute("SELECT count(*), sum(status = 'pass') FROM check_results").fetchone() == (4, 3)
    plan = " ".join(
        str(row[-1])
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT trace_id FROM failed_checks WHERE name = ? AND status = 'fail'",
            ("scope",),
        )
    )
    assert "USING INDEX failed_checks_name" in plan


# The schema of version 1, which kept every check result as a row of the table check_results.
_SCHEMA_V1 = """
CREATE TABLE trajectories (
    trace_id TEXT PRIMARY KEY, agent TEXT NOT NULL, service_name TEXT, service_version TEXT,
    conversation_id TEXT, outcome TEXT NOT NULL, score REAL NOT NULL, policy_version TEXT,
    complete INTEGER NOT NULL, started_ns INTEGER NOT NULL, ended_ns INTEGER NOT NULL,
    graded_ns INTEGER NOT NULL, verdict TEXT NOT NULL
);
CREATE INDEX trajectories_started ON trajectories (started_ns);
CREATE INDEX trajectories_agent ON trajectories (agent, started_ns);
CREATE INDEX trajectories_outcome ON trajectories (outcome, started_ns);
CREATE TABLE check_results (
    trace_id TEXT NOT NULL REFERENCES trajectories (trace_id) ON DELETE CASCADE,
    position INTEGER NOT NULL, name TEXT NOT NULL, status TEXT NOT NULL, severity TEXT NOT NULL,
    reason TEXT NOT NULL, steps TEXT NOT NULL, PRIMARY KEY (trace_id, position)
);
CREATE INDEX check_results_failed ON check_results (name, status);
PRAGMA user_version=1;
"""


def test_a_version_1_store_is_read_as_it_is_and_migrated_by_its_next_writer(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    written = [verdict(1, outcome="unsafe"), verdict(2, start_s=200)]
    with closing(sqlite3.connect(path)) as old:
        old.executescript(_SCHEMA_V1)
        with old:
            for v in written:
                data = verdict_to_dict(v)
                old.execute(
                    "INSERT INTO trajectories VALUES (?, ?, ?, NULL, NULL, ?, ?, ?, 1, ?, ?, ?, ?)",
                    (
                        data["trace_id"],
                        data["agent"],
                        data["service_name"],
                        v.outcome,
                        v.score,
                        v.policy_version,
                        data["start_ns"],
                        data["end_ns"],
                        v.graded_at_ns,
                        json.dumps(data),
                    ),
                )
                old.executemany(
                    "INSERT INTO check_results VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            data["trace_id"],
                            i,
                            c["name"],
                            c["status"],
                            c["severity"],
                            c["reason"],
                            json.dumps(c["steps"]),
                        )
                        for i, c in enumerate(data["checks"])
                    ],
                )
    expected = [json.loads(json.dumps(verdict_to_dict(v))) for v in written]
    # A reader (``otel-traj report``) does not migrate: it reads the old table.
    with closing(connect(path, readonly=True)) as reader:
        assert [v["trace_id"][-1] for v in read_verdicts(reader, Query(failed="scope"))] == ["1"]
    with closing(connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
        assert list(read_verdicts(conn)) == expected
        assert [v["trace_id"][-1] for v in read_verdicts(conn, Query(failed="scope"))] == ["1"]
        assert conn.execute("SELECT count(*) FROM failed_checks").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM check_results").fetchone()[0] == 4
        indexes = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert "check_results_failed" not in indexes and "failed_checks_name" in indexes
        write_verdicts(conn, [verdict(2, outcome="unsafe", start_s=200)])  # re-graded after the move
        assert [v["trace_id"][-1] for v in read_verdicts(conn, Query(failed="scope"))] == ["1", "2"]
    with closing(connect(path)) as again:  # the next start finds the current version: nothing to do
        assert again.execute("SELECT count(*) FROM failed_checks").fetchone()[0] == 2


def test_a_failed_migration_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    with closing(sqlite3.connect(path)) as old:
        # A table in the way of the rename: the migration fails after it dropped the old index.
        old.executescript(_SCHEMA_V1 + "CREATE TABLE failed_checks (x);")
    with pytest.raises(sqlite3.OperationalError, match="failed_checks"):
        connect(path)
    with closing(sqlite3.connect(path)) as after:
        assert after.execute("PRAGMA user_version").fetchone()[0] == 1
        names = {n for (n,) in after.execute("SELECT name FROM sqlite_master")}
        assert {"check_results", "check_results_failed", "failed_checks"} <= names


def test_values_beyond_the_fast_encoder_are_stored_too(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.db")
    v = verdict(2)
    # Parsed tool arguments can hold integers beyond 64 bits; other SDKs' attributes, odd types.
    v.trajectory.attributes = {"app.big": 2**70, "app.when": Path("/x")}
    write_verdicts(conn, [v])
    (stored,) = read_verdicts(conn)
    assert stored["attributes"] == {"app.big": 2**70, "app.when": "/x"}
    assert stored["checks"] == json.loads(json.dumps(verdict_to_dict(v)["checks"]))


def test_strings_with_lone_surrogates_are_stored_and_read_back(tmp_path: Path) -> None:
    # A file name decoded with surrogateescape, as an attribute and as the agent's name.
    conn = connect(tmp_path / "s.db")
    v = verdict(4, agent="agent-\udcff")
    v.trajectory.attributes = {"app.file": "/data/r\udce9sum\u00e9.pdf"}
    write_verdicts(conn, [v, verdict(5)])
    stored = {d["trace_id"]: d for d in read_verdicts(conn)}
    assert stored[v.trajectory.trace_hex]["attributes"] == {"app.file": "/data/r\udce9sum\u00e9.pdf"}
    assert stored[v.trajectory.trace_hex]["agent"] == "agent-\udcff"
    assert len(stored) == 2
    # The indexed column holds valid text (SQL readers decode it); the verdict keeps the exact value.
    agents = sorted(a for (a,) in conn.execute("SELECT agent FROM trajectories"))
    assert agents == ["agent-\ufffd\ufffd\ufffd", "support_agent"]
    assert conn.execute("SELECT count(*) FROM check_results").fetchone()[0] == 4


def test_regrade_overwrites_by_trace_id(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.db")
    write_verdicts(conn, [verdict(7, outcome="unsafe")])
    regraded = verdict(7, outcome="pass")
    regraded.checks = regraded.checks[1:]
    write_verdicts(conn, [regraded])
    assert [v["outcome"] for v in read_verdicts(conn)] == ["pass"]
    assert conn.execute("SELECT count(*) FROM check_results").fetchone()[0] == 1


def test_a_batch_of_every_statement_size_is_written_whole(tmp_path: Path) -> None:
    # 341 rows: one statement of each size (256 + 64 + 16 + 4 + 1); trace 9 also comes twice.
    conn = connect(tmp_path / "s.db")
    batch = [verdict(i, outcome="unsafe" if i % 7 == 0 else "pass", start_s=i) for i in range(1, 342)]
    batch.append(verdict(9, outcome="unsafe", start_s=9))
    write_verdicts(conn, batch)
    stored = list(read_verdicts(conn))
    assert [int(v["trace_id"], 16) for v in stored] == list(range(1, 342))
    assert [v["outcome"] for v in stored] == [
        "unsafe" if i % 7 == 0 or i == 9 else "pass" for i in range(1, 342)
    ]
    assert conn.execute("SELECT count(*) FROM failed_checks").fetchone()[0] == 341 // 7 + 1


def test_the_later_of_two_verdicts_for_one_trace_in_a_batch_wins(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.db")
    write_verdicts(conn, [verdict(7, outcome="unsafe"), verdict(7, outcome="pass")])
    assert [v["outcome"] for v in read_verdicts(conn)] == ["pass"]
    assert conn.execute("SELECT count(*) FROM check_results").fetchone()[0] == 2


def test_filters(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.db")
    write_verdicts(
        conn,
        [verdict(1, "a", "pass", 100), verdict(2, "b", "unsafe", 200), verdict(3, "a", "unsafe", 300)],
    )

    def ids(query: Query) -> list[str]:
        return [v["trace_id"][-1] for v in read_verdicts(conn, query)]

    assert ids(Query()) == ["1", "2", "3"]
    assert ids(Query(agent="a")) == ["1", "3"]
    assert ids(Query(outcome="unsafe")) == ["2", "3"]
    assert ids(Query(since_ns=200 * NS)) == ["2", "3"]
    assert ids(Query(agent="a", outcome="unsafe", since_ns=150 * NS)) == ["3"]
    assert ids(Query(limit=1)) == ["1"]
    assert ids(Query(failed="scope")) == ["2", "3"]  # the unsafe runs failed scope
    assert ids(Query(failed="scope", agent="b")) == ["2"]
    assert ids(Query(failed="budget")) == []  # it passed everywhere


def test_parse_since() -> None:
    now = 10_000 * NS
    assert parse_since("1h", now) == now - 3600 * NS
    assert parse_since("30m", now) == now - 1800 * NS
    assert parse_since("1970-01-01T00:01:40") == 100 * NS
    assert parse_since("1970-01-01T01:01:40+01:00") == 100 * NS
    with pytest.raises(Exception, match="expected a duration"):
        parse_since("yesterday")


def test_sink_persists_concurrent_exports_through_a_small_queue(
    tmp_path: Path, open_sink: Callable[..., SqliteSink]
) -> None:
    path = tmp_path / "s.db"
    sink = open_sink(path=path, max_queue=8, batch_size=3)
    threads = [threading.Thread(target=lambda i=i: sink.export(verdict(i + 1))) for i in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sink.force_flush()
    reader = connect(path, readonly=True)
    assert len(list(read_verdicts(reader))) == 50
    assert sink.written == 50
    sink.shutdown()
    sink.export(verdict(99))
    assert sink.stats.snapshot().dropped == {"store_closed": 1}
    assert sink.force_flush()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        connect(path)
    with pytest.raises(StoreError, match="no such store"):
        connect(tmp_path / "missing.db", readonly=True)


def test_write_errors_are_counted_not_raised(tmp_path: Path, open_sink: Callable[..., SqliteSink]) -> None:
    path = tmp_path / "s.db"
    sink = open_sink(path=path)
    blocker = sqlite3.connect(path, timeout=0)
    blocker.execute("BEGIN EXCLUSIVE")
    sink._conn.execute("PRAGMA busy_timeout=0")
    sink.export(verdict(1))
    assert sink.force_flush()
    blocker.rollback()
    blocker.close()
    assert sink.stats.snapshot().sink_errors == {"SqliteSink": 1}
    sink.export(verdict(2))
    assert sink.force_flush()
    sink.shutdown()
    assert [v["trace_id"][-1] for v in read_verdicts(connect(path, readonly=True))] == ["2"]


def test_a_verdict_that_cannot_be_encoded_costs_only_itself(
    tmp_path: Path, open_sink: Callable[..., SqliteSink]
) -> None:
    path = tmp_path / "s.db"
    sink = open_sink(path=path, batch_size=10)
    bad = verdict(2)
    # No JSON encoder takes a tuple key.
    bad.trajectory.attributes = {("not", "a", "key"): 1}  # type: ignore[dict-item]
    for v in (verdict(1), bad, verdict(3)):
        sink.export(v)  # encoded here: the bad one never reaches the writer's batch
    assert sink.force_flush()
    assert sink.stats.snapshot().sink_errors == {"SqliteSink": 1}
    assert sink.written == 2
    sink.export(verdict(4))
    sink.shutdown()
    stored = [v["trace_id"][-1] for v in read_verdicts(connect(path, readonly=True))]
    assert sorted(stored) == ["1", "3", "4"]


def test_export_waits_while_max_queue_verdicts_wait_for_a_busy_writer(
    tmp_path: Path, open_sink: Callable[..., SqliteSink]
) -> None:
    path = tmp_path / "s.db"
    sink = open_sink(path=path, max_queue=2)
    writing, release = threading.Event(), threading.Event()
    write = sink._write

    def slow_write(prepared: list[Prepared]) -> None:
        writing.set()
        release.wait()
        write(prepared)

    sink._write = slow_write  # type: ignore[method-assign]
    sink.export(verdict(1))
    assert writing.wait(10)  # the writer holds verdict 1; two more fill the queue
    sink.export(verdict(2))
    sink.export(verdict(3))
    exporter = threading.Thread(target=sink.export, args=(verdict(4),))
    exporter.start()
    exporter.join(0.5)
    assert exporter.is_alive(), "export returned although max_queue verdicts were waiting"
    release.set()
    exporter.join(10)
    assert not exporter.is_alive()
    assert sink.force_flush()
    assert sink.written == 4
    sink.shutdown()


def test_a_connection_limited_to_999_variables_writes_1000_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_sink: Callable[..., SqliteSink]
) -> None:
    # 999: SQLite's default before 3.32, and what some builds still set.
    batch = [verdict(i, outcome="unsafe" if i % 7 == 0 else "pass", start_s=i) for i in range(1, 1001)]
    with closing(connect(tmp_path / "direct.db")) as conn:
        conn.setlimit(VARIABLES, 999)
        write_verdicts(conn, batch)
        assert [int(v["trace_id"], 16) for v in read_verdicts(conn)] == list(range(1, 1001))

    def limited(path: str | Path, readonly: bool = False) -> sqlite3.Connection:
        conn = connect(path, readonly)
        conn.setlimit(VARIABLES, 999)
        return conn

    monkeypatch.setattr(store, "connect", limited)
    sink = open_sink(path=tmp_path / "sink.db")
    assert sink._conn.getlimit(VARIABLES) == 999
    for v in batch:
        sink.export(v)
    assert sink.force_flush()
    assert sink.written == 1000
    assert sink.stats.snapshot().sink_errors == {}
    with closing(connect(tmp_path / "sink.db", readonly=True)) as reader:
        assert len(list(read_verdicts(reader))) == 1000
        assert reader.execute("SELECT count(*) FROM failed_checks").fetchone()[0] == 1000 // 7


def test_constructor_arguments_are_keyword_only_with_environment_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_sink: Callable[..., SqliteSink]
) -> None:
    with pytest.raises(TypeError):
        SqliteSink(tmp_path / "s.db")  # type: ignore[call-arg]
    monkeypatch.setenv("OTEL_TRAJ_STORE", str(tmp_path / "env.db"))
    monkeypatch.setenv("OTEL_TRAJ_STORE_QUEUE", "7")
    sink = open_sink()
    assert (sink.path, sink.max_queue, sink.batch_size) == (tmp_path / "env.db", 7, 500)
    with pytest.raises(ValueError, match="max_queue=0"):
        open_sink(path=tmp_path / "s.db", max_queue=0)


def test_shutdown_returns_by_its_deadline_while_another_connection_holds_the_write_lock(
    tmp_path: Path, open_sink: Callable[..., SqliteSink]
) -> None:
    path = tmp_path / "s.db"
    sink = open_sink(path=path, batch_size=1)
    writing = threading.Event()
    write = sink._write

    def signalled_write(prepared: list[Prepared]) -> None:
        writing.set()
        write(prepared)

    sink._write = signalled_write  # type: ignore[method-assign]
    blocker = sqlite3.connect(path)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        sink.export(verdict(1))
        assert writing.wait(10)  # the writer waits for the lock with verdict 1 (up to 10 s)
        sink.export(verdict(2))
        sink.export(verdict(3))
        assert sink.force_flush(timeout_millis=10) is False
        stopper = threading.Thread(target=sink.shutdown, kwargs={"timeout_millis": 100})
        stopper.start()
        stopper.join(timeout=5)
        assert not stopper.is_alive(), "shutdown waited past its deadline for a locked database"
        assert sink.stats.snapshot().dropped == {"store_shutdown": 2}
        sink.export(verdict(4))
        assert sink.stats.snapshot().dropped == {"store_shutdown": 2, "store_closed": 1}
    finally:
        blocker.rollback()
        blocker.close()
    # Once the lock is free the writer commits the batch it held, takes nothing more and ends.
    sink._thread.join(timeout=30)
    assert not sink._thread.is_alive()
    assert sink.written == 1
    with closing(connect(path, readonly=True)) as reader:
        assert [v["trace_id"][-1] for v in read_verdicts(reader)] == ["1"]


def test_an_export_waiting_for_room_returns_once_shutdown_begins(
    tmp_path: Path, open_sink: Callable[..., SqliteSink]
) -> None:
    sink = open_sink(path=tmp_path / "s.db", max_queue=1, batch_size=1)
    writing, release = threading.Event(), threading.Event()
    write = sink._write

    def held_write(prepared: list[Prepared]) -> None:
        writing.set()
        release.wait()
        write(prepared)

    sink._write = held_write  # type: ignore[method-assign]
    try:
        sink.export(verdict(1))
        assert writing.wait(10)
        sink.export(verdict(2))  # the queue is full
        exporter = threading.Thread(target=sink.export, args=(verdict(3),))
        exporter.start()
        exporter.join(0.5)
        assert exporter.is_alive(), "export returned although max_queue verdicts were waiting"
        stopper = threading.Thread(target=sink.shutdown, kwargs={"timeout_millis": 50})
        stopper.start()
        stopper.join(timeout=5)
        exporter.join(timeout=5)
        assert not stopper.is_alive() and not exporter.is_alive()
        assert sink.stats.snapshot().dropped == {"store_closed": 1, "store_shutdown": 1}
    finally:
        release.set()
    sink._thread.join(timeout=10)
    assert not sink._thread.is_alive()
    assert sink.written == 1
