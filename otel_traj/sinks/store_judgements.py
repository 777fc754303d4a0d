"""LLM judge results in the store: the table ``judgements``, one row per (trace, judge).

Apart from ``trajectories`` on purpose: a judgement comes later than the verdict, from another
thread, and never changes it. The table is created by the first judgement written, so a store that
never saw a judge is the same file it always was; a re-judged trace overwrites its row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from otel_traj.judge.result import JudgeResult
from otel_traj.redact import Redactor

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgements (
    trace_id TEXT NOT NULL,
    judge TEXT NOT NULL,
    agent TEXT NOT NULL,
    model TEXT NOT NULL,
    score REAL NOT NULL,
    label TEXT NOT NULL,
    explanation TEXT NOT NULL,
    severity TEXT NOT NULL,
    source TEXT NOT NULL,
    policy_version TEXT,
    judged_ns INTEGER NOT NULL,
    PRIMARY KEY (trace_id, judge)
);
"""
COLUMNS = (
    "trace_id",
    "judge",
    "agent",
    "model",
    "score",
    "label",
    "explanation",
    "severity",
    "source",
    "policy_version",
    "judged_ns",
)
UPSERT = (
    f"INSERT INTO judgements ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))}) "
    f"ON CONFLICT (trace_id, judge) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in COLUMNS[2:])}"
)


@dataclass(slots=True, frozen=True)
class JudgementRow:
    """A judge result as the store writes it (explanation redacted)."""

    values: tuple[Any, ...]


def judgement_row(result: JudgeResult, redactor: Redactor | None) -> JudgementRow:
    explanation = result.explanation if redactor is None else redactor.clean(result.explanation, ())
    return JudgementRow(
        (
            result.trace_hex,
            result.judge,
            result.agent,
            result.model,
            result.score,
            result.label,
            explanation,
            result.severity,
            result.source,
            result.policy_version,
            result.judged_at_ns,
        )
    )


def write_judgements(conn: sqlite3.Connection, rows: Sequence[JudgementRow]) -> None:
    with conn:
        conn.execute(_SCHEMA)
        conn.executemany(UPSERT, [row.values for row in rows])


def read_judgements(conn: sqlite3.Connection, trace_id: str | None = None) -> list[dict[str, Any]]:
    """Stored judgements (of one trace, with ``trace_id``), oldest first; none in a store without any."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'judgements'"
    ).fetchone()
    if not exists:
        return []
    where, args = ("WHERE trace_id = ?", (trace_id,)) if trace_id is not None else ("", ())
    cursor = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM judgements {where} ORDER BY judged_ns", args)
    return [dict(zip(COLUMNS, row, strict=True)) for row in cursor]
