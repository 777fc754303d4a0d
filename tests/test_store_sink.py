"""SqliteSink, in-process: its bounded queue, the writer thread, errors it counts, its lifecycle
(shutdown deadlines, exports after shutdown), constructor settings and SQLite's variable limit."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from otel_traj.sinks import store
from otel_traj.sinks.store import Prepared, SqliteSink, connect, read_verdicts, write_verdicts
from tests.store_helpers import verdict

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


def test_a_locked_database_delays_verdicts_and_loses_none(
    tmp_path: Path, open_sink: Callable[..., SqliteSink]
) -> None:
    """Another connection holding the write lock past the busy timeout (an operator's ``sqlite3``
    session, a backup): the batch waits at the head of the queue and is written once the lock is
    free; nothing is counted as lost."""
    path = tmp_path / "s.db"
    sink = open_sink(path=path)
    blocker = sqlite3.connect(path, timeout=0)
    blocker.execute("BEGIN EXCLUSIVE")
    sink._conn.execute("PRAGMA busy_timeout=0")
    sink.export(verdict(1))
    sink.export(verdict(2))
    assert sink.force_flush(timeout_millis=200) is False
    assert sink.written == 0
    blocker.rollback()
    blocker.close()
    assert sink.force_flush()
    assert sink.written == 2
    snapshot = sink.stats.snapshot()
    assert (snapshot.sink_errors, snapshot.dropped) == ({}, {})
    sink.shutdown()
    assert sorted(v["trace_id"][-1] for v in read_verdicts(connect(path, readonly=True))) == ["1", "2"]


def test_write_errors_are_counted_as_lost_not_raised(
    tmp_path: Path, open_sink: Callable[..., SqliteSink]
) -> None:
    path = tmp_path / "s.db"
    sink = open_sink(path=path)
    with closing(sqlite3.connect(path)) as other:
        other.execute("ALTER TABLE failed_checks RENAME TO moved")
    sink.export(verdict(1))
    assert sink.force_flush()
    snapshot = sink.stats.snapshot()
    assert (snapshot.sink_errors, snapshot.dropped) == ({"SqliteSink": 1}, {"store": 1})
    with closing(sqlite3.connect(path)) as other:
        other.execute("ALTER TABLE moved RENAME TO failed_checks")
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
    bad = replace(bad, trajectory=replace(bad.trajectory, attributes={("not", "a", "key"): 1}))
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
    assert sink._delivery.wait_stopped(30)
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
    assert sink._delivery.wait_stopped(10)
    assert sink.written == 1
