"""A replica of the fleet store killed with SIGKILL while it writes a batch, then the runs delivered
again to another replica: what it had committed stays stored once, the batch it was writing leaves
no row behind (one transaction), and every run delivered again is stored once, its failed checks
once, whether it had been written before the kill or not.

What a killed replica had acknowledged and not yet written is in its memory only: the exporter does
not send acknowledged spans again, so a fleet gets them back only from a replay. The test replays
every run, the way a Collector's retry or an operator's replay would."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg

from tests.serve_helpers import FIXTURES, POLICY, Served, trace_ids_of, wait_for

# The writer's transaction upserts the batch's trajectories, then deletes their earlier failures:
# an exclusive lock on failed_checks holds it there, its batch written and not committed.
_WRITER_BLOCKED = (
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
    "AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM failed_checks%'"
)


def stored(url: str) -> dict[str, int]:
    """Per stored trace, its rows in ``failed_checks``, checked to be its verdict's failed checks
    (a run's failures written twice, or left from an earlier write, would not be)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            b"SELECT t.trace_id, t.verdict, count(f.trace_id) FROM trajectories t "
            b"LEFT JOIN failed_checks f ON f.trace_id = t.trace_id GROUP BY t.trace_id, t.verdict"
        ).fetchall()
    for trace_id, verdict, failed in rows:
        assert failed == sum(c["status"] == "fail" for c in json.loads(verdict)["checks"]), trace_id
    return {trace_id: failed for trace_id, _, failed in rows}


@contextmanager
def failed_checks_locked(url: str) -> Iterator[None]:
    with psycopg.connect(url) as conn, conn.transaction():
        conn.execute(b"LOCK TABLE failed_checks IN EXCLUSIVE MODE")
        yield


def blocked_writer(url: str) -> int:
    """The backend id of the replica's writer once it waits for the lock, its batch half written."""
    found: list[int] = []

    def waiting() -> bool:
        with psycopg.connect(url) as conn:
            found.extend(int(pid) for (pid,) in conn.execute(_WRITER_BLOCKED.encode()))
        return bool(found)

    wait_for(waiting, what="a batch mid-write")
    return found[0]


def backend_alive(url: str, pid: int) -> bool:
    with psycopg.connect(url) as conn:
        return conn.execute(b"SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() is not None


def test_a_replica_killed_mid_batch_leaves_what_it_committed_once_and_a_redelivery_is_stored_once(
    served: Callable[..., Served], postgres_url: str
) -> None:
    files = sorted(FIXTURES.glob("*/clean.otlp.pb"))[:5] + sorted(FIXTURES.glob("*/violating.otlp.pb"))[:5]
    before, during = files[::2], files[1::2]
    committed = set().union(*(trace_ids_of(path.read_bytes()) for path in before))
    in_flight = set().union(*(trace_ids_of(path.read_bytes()) for path in during))
    replica = served("--policy", str(POLICY), "--store", postgres_url)
    for path in before:
        assert not replica.export_raw(path.read_bytes()).HasField("partial_success")
    wait_for(lambda: set(stored(postgres_url)) == committed, what="the first runs committed")
    first = stored(postgres_url)

    with failed_checks_locked(postgres_url):
        for path in during:
            assert not replica.export_raw(path.read_bytes()).HasField("partial_success")
        writer = blocked_writer(postgres_url)
        replica.signal(signal.SIGKILL)
        assert replica.proc.wait(timeout=30) == -signal.SIGKILL
    # Released, the killed replica's transaction finds its client gone and is rolled back.
    wait_for(lambda: not backend_alive(postgres_url, writer), what="the killed replica's backend to end")
    assert stored(postgres_url) == first

    # Every run again, to another replica: the ones committed before the kill and the lost batch.
    again = served("--policy", str(POLICY), "--store", postgres_url)
    for path in files:
        assert not again.export_raw(path.read_bytes()).HasField("partial_success")
    assert again.stop() == 0
    after = stored(postgres_url)
    assert set(after) == committed | in_flight
    assert {trace_id: after[trace_id] for trace_id in committed} == first
    assert sum(after.values()) > sum(first.values())
