"""Conversation verdicts in the store: the table ``conversations`` (schema version 3, in
``store_schema``), one row per conversation, its verdict JSON (``conversation_to_dict``, redacted)
included.

The key is the conversation id and its first trace: the same traces graded again (a restarted
service, a re-run) overwrite the row, while a conversation that went idle and was started again by a
later trace is a row of its own, as the tracker graded it. ``--failed`` reads the verdict JSON:
conversations are few next to trajectories, so their failed checks need no table of their own.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from otel_traj.conversations.serialize import conversation_to_dict
from otel_traj.redact import Redactor
from otel_traj.sinks.store_schema import Query, select_verdicts

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict

_COLUMNS = (
    "conversation_id",
    "first_trace_id",
    "agent",
    "outcome",
    "score",
    "policy_version",
    "complete",
    "traces",
    "started_ns",
    "ended_ns",
    "graded_ns",
    "verdict",
)
UPSERT = (
    f"INSERT INTO conversations ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
    f"ON CONFLICT (conversation_id, first_trace_id) DO UPDATE SET "
    f"{', '.join(f'{c} = excluded.{c}' for c in _COLUMNS[2:])}"
)
_FAILED = (
    "EXISTS (SELECT 1 FROM json_each(verdict, '$.checks') AS c "
    "WHERE json_extract(c.value, '$.name') = ? AND json_extract(c.value, '$.status') = 'fail')"
)


@dataclass(slots=True, frozen=True)
class ConversationRow:
    """A conversation verdict as the store writes it (reasons redacted)."""

    values: tuple[Any, ...]


def conversation_row(verdict: ConversationVerdict, redactor: Redactor | None) -> ConversationRow:
    # ASCII JSON: text with lone surrogates travels as escapes and reads back as it was.
    text = json.dumps(conversation_to_dict(verdict, redactor), separators=(",", ":"), default=str)
    return ConversationRow(
        (
            _column_text(verdict.conversation_id),
            verdict.trace_ids[0],
            _column_text(verdict.agent),
            verdict.outcome,
            verdict.score,
            verdict.policy_version,
            int(verdict.complete),
            len(verdict.traces),
            verdict.start_ns,
            verdict.end_ns,
            verdict.graded_at_ns or time.time_ns(),
            text,
        )
    )


def _column_text(value: str) -> str:
    """Text for an indexed column: valid UTF-8 even when the value holds lone surrogates."""
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def write_conversations(conn: sqlite3.Connection, rows: Sequence[ConversationRow]) -> None:
    with conn:
        conn.executemany(UPSERT, [row.values for row in rows])


def has_conversations(conn: sqlite3.Connection) -> bool:
    """False for a store written before schema version 3 (a reader does not migrate it)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'conversations'")
    return found.fetchone() is not None


def read_conversations(conn: sqlite3.Connection, query: Query | None = None) -> list[dict[str, Any]]:
    """Stored conversation verdicts as ``conversation_to_dict`` shapes, oldest first; ``since_ns``
    compares with the first trace's start, ``failed`` names a conversation check."""
    if not has_conversations(conn):
        return []
    sql, params = conversations_sql(query or Query(), _FAILED)
    return [json.loads(text) for (text,) in conn.execute(sql, params)]


def conversations_sql(query: Query, failed: str) -> tuple[str, list[Any]]:
    """The SQL (``?`` parameters) and parameters of ``read_conversations``, for either engine;
    ``failed``: the engine's clause for "the check named by the parameter failed"."""
    filters = (
        ("started_ns >= ?", query.since_ns),
        ("agent = ?", query.agent),
        ("outcome = ?", query.outcome),
        (failed, query.failed),
    )
    return select_verdicts("conversations", filters, "started_ns, conversation_id", query.limit)
