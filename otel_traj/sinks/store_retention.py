"""Retention: runs, conversations and judge results older than the store keeps, deleted in batches.

Each statement deletes at most ``batch_rows`` rows in its own transaction, so a store that kept a
month too long is trimmed without one long lock, and writers of new verdicts pass in between. A
run's failed checks go with it (``ON DELETE CASCADE``). The statements are written once, with
``?`` parameters, for both engines.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# (table, its key, the column compared with the cut-off).
_TABLES = (
    ("trajectories", "trace_id", "started_ns"),
    ("conversations", "conversation_id, first_trace_id", "started_ns"),
    ("judgements", "trace_id, judge", "judged_ns"),
)
BATCH_ROWS = 5_000
# How often a sink trims its store, at most: trimming runs on the writer's thread, between batches.
EVERY_S = 60.0


def statements() -> list[str]:
    """One DELETE per table, taking (cut-off in ns, batch size)."""
    return [
        f"DELETE FROM {table} WHERE ({key}) IN (SELECT {key} FROM {table} WHERE {column} < ? LIMIT ?)"
        for table, key, column in _TABLES
    ]


@dataclass(slots=True, frozen=True)
class Retention:
    """What a store keeps: rows whose time is at most ``keep_s`` old (0: everything)."""

    keep_s: float = 0.0

    def cutoff_ns(self, now_ns: int) -> int | None:
        return None if self.keep_s <= 0 else now_ns - int(self.keep_s * 1e9)


def prune(delete: Callable[[str, int, int], int], cutoff_ns: int, batch_rows: int = BATCH_ROWS) -> int:
    """Delete every row older than ``cutoff_ns`` in batches through ``delete(sql, cutoff, limit)``
    (one committed statement, returning the rows it deleted); the rows deleted."""
    total = 0
    for sql in statements():
        while (deleted := delete(sql, cutoff_ns, batch_rows)) > 0:
            total += deleted
            if deleted < batch_rows:
                break
    return total
