"""Reading the store (``otel-traj report``, ``connect(readonly=True)``) changes nothing and leaves no
``-wal`` or ``-shm`` file next to a closed store."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from otel_traj.cli import main
from otel_traj.sinks.store import SqliteSink, connect, read_verdicts
from tests.store_helpers import verdict


def write_store(path: Path) -> None:
    sink = SqliteSink(path=path)
    sink.export(verdict(1))
    sink.export(verdict(2, outcome="unsafe"))
    sink.shutdown()


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_report_on_a_closed_store_leaves_no_wal_or_shm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "verdicts.db"
    write_store(store)
    assert files_in(tmp_path) == ["verdicts.db"]
    assert main(["report", "--store", str(store)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 trajectories: 1 unsafe, 1 pass"
    assert main(["report", "--store", str(store), "--failed", "scope", "--format", "json"]) == 0
    assert files_in(tmp_path) == ["verdicts.db"]


def test_a_reader_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "verdicts.db"
    write_store(store)
    with closing(connect(store, readonly=True)) as reader:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader.execute("DELETE FROM trajectories")
        assert len(list(read_verdicts(reader))) == 2
    assert files_in(tmp_path) == ["verdicts.db"]


def test_a_reader_beside_the_writer_sees_its_commits(tmp_path: Path) -> None:
    store = tmp_path / "verdicts.db"
    sink = SqliteSink(path=store)
    try:
        sink.export(verdict(1))
        assert sink.force_flush()
        with closing(connect(store, readonly=True)) as reader:
            assert [v["trace_id"][-1] for v in read_verdicts(reader)] == ["1"]
        sink.export(verdict(2))
        assert sink.force_flush()
        with closing(connect(store, readonly=True)) as reader:
            assert [v["trace_id"][-1] for v in read_verdicts(reader)] == ["1", "2"]
    finally:
        sink.shutdown()
    assert files_in(tmp_path) == ["verdicts.db"]


def test_a_path_with_uri_characters_is_read(tmp_path: Path) -> None:
    directory = tmp_path / "runs #1?"
    directory.mkdir()
    write_store(directory / "verdicts.db")
    with closing(connect(directory / "verdicts.db", readonly=True)) as reader:
        assert len(list(read_verdicts(reader))) == 2
