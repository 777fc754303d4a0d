"""The SQLite verdict store: its schema, reading and writing verdicts, filters, and migrations."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest

from otel_traj.cli import main
from otel_traj.cli.report import parse_since
from otel_traj.serialize import verdict_to_dict
from otel_traj.sinks.store import (
    SCHEMA_VERSION,
    Query,
    StoreError,
    connect,
    read_verdicts,
    write_verdicts,
)
from tests.store_helpers import NS, verdict


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
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
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
    v = replace(v, trajectory=replace(v.trajectory, attributes={"app.big": 2**70, "app.when": Path("/x")}))
    write_verdicts(conn, [v])
    (stored,) = read_verdicts(conn)
    assert stored["attributes"] == {"app.big": 2**70, "app.when": "/x"}
    assert stored["checks"] == json.loads(json.dumps(verdict_to_dict(v)["checks"]))


def test_strings_with_lone_surrogates_are_stored_and_read_back(tmp_path: Path) -> None:
    # A file name decoded with surrogateescape, as an attribute and as the agent's name.
    conn = connect(tmp_path / "s.db")
    v = verdict(4, agent="agent-\udcff")
    v = replace(v, trajectory=replace(v.trajectory, attributes={"app.file": "/data/r\udce9sum\u00e9.pdf"}))
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
    regraded = replace(regraded, checks=regraded.checks[1:])
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
    # Past the store's 64-bit nanoseconds (2262) or before 1970: the range's end, never an error.
    assert parse_since("2999-01-01") == 2**63 - 1
    assert parse_since("99999999999d", now) == 0


def test_report_since_a_time_no_run_can_have_lists_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.db"
    with closing(connect(store)) as conn:
        write_verdicts(conn, [verdict(1)])
    assert main(["report", "--store", str(store), "--since", "2999-01-01", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["trajectories"] == []
    assert main(["report", "--store", str(store), "--since", "1970-01-01", "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["trajectories"]) == 1


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        connect(path)
    with pytest.raises(StoreError, match="no such store"):
        connect(tmp_path / "missing.db", readonly=True)
