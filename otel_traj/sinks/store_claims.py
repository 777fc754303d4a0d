"""Conversations across replicas through the PostgreSQL store (``serve --conversations-from store``).

Each replica writes the summary of every graded trace of a conversation (``TraceSummary``, the one
the evaluation events carry) to ``conversation_traces``, and the conversation's row in
``open_conversations`` the time it may be graded: the database server's clock when the summary was
written, plus the policy's ``conversation.idle_s`` (the server's clock, so replicas' clocks need not
agree). Both go through the store's writer, in the batch of the trace's verdict.

Every replica claims, once a second, the conversations that are due: ``SELECT ... FOR UPDATE SKIP
LOCKED`` takes each row for one replica only, and that replica, in the same transaction, deletes the
conversation's summaries, grades them and writes the conversation's verdict. So a conversation is
graded once, from every replica's traces, and a replica killed while it grades leaves the
conversation to the next claim. A summary written while its conversation is being claimed waits for
the claim's commit, then opens the conversation again (as in memory, a trace after the conversation
went idle starts a new one).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from otel_traj.conversations import Conversations, ConversationVerdict, TraceSummary
from otel_traj.conversations.grade import agent_policy, grade_with_policy
from otel_traj.conversations.tracker import NO_RULES, conversation_summary
from otel_traj.delivery import backoff_delay
from otel_traj.policy import Policy
from otel_traj.redact import Redactor
from otel_traj.sinks.store_conversations import UPSERT as CONVERSATION_UPSERT
from otel_traj.sinks.store_conversations import conversation_row
from otel_traj.sinks.store_postgres_schema import connect, pg_sql
from otel_traj.stats import PipelineStats
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    import psycopg

    from otel_traj.sinks.store_postgres import PostgresSink

logger = logging.getLogger("otel_traj.sinks.store")

CLAIM_EVERY_S = 1.0
CLAIM_BATCH = 100
_NOW_NS = "(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint"
OPEN = (
    f"INSERT INTO open_conversations (conversation_id, due_ns) VALUES (%s, {_NOW_NS} + %s) "
    "ON CONFLICT (conversation_id) DO UPDATE "
    "SET due_ns = GREATEST(open_conversations.due_ns, excluded.due_ns)"
).encode()
HOLD = (
    b"INSERT INTO conversation_traces (conversation_id, trace_id, summary) VALUES (%s, %s, %s) "
    b"ON CONFLICT (conversation_id, trace_id) DO UPDATE SET summary = excluded.summary"
)
_CLAIM = (
    f"SELECT conversation_id FROM open_conversations WHERE due_ns <= {_NOW_NS} "
    "ORDER BY due_ns LIMIT %s FOR UPDATE SKIP LOCKED"
).encode()
_TAKE = b"DELETE FROM conversation_traces WHERE conversation_id = ANY(%s) RETURNING conversation_id, summary"
_CLOSE = b"DELETE FROM open_conversations WHERE conversation_id = ANY(%s)"
_CONVERSATION = pg_sql(CONVERSATION_UPSERT).encode()


@dataclass(slots=True, frozen=True)
class SummaryRow:
    """A graded trace's summary, held under its conversation until a replica claims it."""

    conversation_id: str
    trace_id: str
    idle_ns: int
    summary: str


def summary_row(summary: TraceSummary, idle_s: float) -> SummaryRow:
    text = json.dumps(summary.to_dict(), separators=(",", ":"))
    return SummaryRow(summary.conversation_id, summary.trace_id, round(idle_s * 1e9), text)


def hold(cur: psycopg.Cursor[Any], rows: Sequence[SummaryRow]) -> None:
    """Write the summaries and open (or push back) their conversations. The conversations' rows are
    locked first and in one order, so two writers never wait for each other crosswise."""
    rows = sorted(rows, key=lambda r: (r.conversation_id, r.trace_id))
    due = {r.conversation_id: r.idle_ns for r in rows}
    cur.executemany(OPEN, list(due.items()))
    cur.executemany(HOLD, [(r.conversation_id, r.trace_id, r.summary) for r in rows])


def claim(
    conn: psycopg.Connection[Any],
    policy: Policy,
    redactor: Redactor | None,
    stats: PipelineStats,
    limit: int = CLAIM_BATCH,
) -> list[ConversationVerdict]:
    """Grade the conversations due now that no other replica is claiming, at most ``limit``, and
    write their verdicts, all in one transaction."""
    verdicts: list[ConversationVerdict] = []
    with conn.transaction(), conn.cursor() as cur:
        ids = [row[0] for row in cur.execute(_CLAIM, (limit,))]
        if not ids:
            return []
        held: dict[str, list[TraceSummary]] = {key: [] for key in ids}
        for conversation_id, text in cur.execute(_TAKE, (ids,)):
            try:
                held[conversation_id].append(TraceSummary.from_dict(json.loads(text)))
            except (KeyError, TypeError, ValueError, OverflowError):  # not a summary we wrote
                stats.count_internal_error()
                logger.exception("a summary of conversation %r cannot be read", conversation_id)
        cur.execute(_CLOSE, (ids,))
        for conversation_id, traces in held.items():
            verdict = _grade(policy, conversation_id, traces, stats)
            if verdict is not None:
                verdicts.append(verdict)
        if verdicts:
            cur.executemany(_CONVERSATION, [conversation_row(v, redactor).values for v in verdicts])
    return verdicts


def _grade(
    policy: Policy, conversation_id: str, traces: list[TraceSummary], stats: PipelineStats
) -> ConversationVerdict | None:
    if not traces:
        return None
    try:
        verdict = grade_with_policy(policy, traces)
    except Exception:
        # Lost to a bug of ours: counted, and the other conversations of the claim still graded.
        stats.count_failed_run()
        logger.exception("grading conversation %r failed", conversation_id)
        return None
    if verdict is None:
        stats.count_dropped(NO_RULES)
    return verdict


class StoreConversations(Conversations):
    """The conversations of a fleet, held in the PostgreSQL store ``sink`` writes: ``observe`` and
    ``add`` hand each summary to the sink's writer; a thread of its own claims the conversations due
    every ``every_s`` (the pipeline's worker never waits for the database); ``ready`` returns what it
    graded, for the pipeline's sinks. ``flush`` grades nothing early: other replicas may still add to
    a conversation, which waits in the store for whichever replica claims it."""

    def __init__(
        self,
        policy: Callable[[], Policy | None],
        *,
        sink: PostgresSink,
        stats: PipelineStats | None = None,
        every_s: float = CLAIM_EVERY_S,
    ) -> None:
        super().__init__(policy, stats=stats)
        self._sink = sink
        self._every_s = every_s
        self._graded: list[ConversationVerdict] = []
        self._graded_lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="otel-traj-store-claims", daemon=True)
        self._thread.start()

    def observe(self, verdict: Verdict) -> None:
        held = conversation_summary(self._policy(), verdict)
        if held is not None:
            self._sink.hold(summary_row(*held))

    def add(self, summary: TraceSummary) -> bool:
        policy = self._policy()
        rules = agent_policy(policy, summary).conversation if policy is not None else None
        if rules is None:
            return False
        self._sink.hold(summary_row(summary, rules.idle_s))
        return True

    def ready(self, flush: bool = False) -> list[ConversationVerdict]:
        with self._graded_lock:
            graded, self._graded = self._graded, []
        return graded

    def claim(self) -> int:
        """One claim now: the conversations graded (kept for ``ready``). Raises psycopg's errors."""
        policy = self._policy()
        if policy is None:
            return 0
        if self._conn is None or self._conn.closed:
            self._conn = connect(self._sink.url)
        graded = claim(self._conn, policy, self._sink.redactor, self.stats)
        with self._graded_lock:
            self._graded.extend(graded)
        return len(graded)

    def _run(self) -> None:
        import psycopg

        delay = self._every_s
        while not self._stop.wait(delay):
            try:
                while self.claim() >= CLAIM_BATCH:
                    pass
            except Exception as exc:  # the server away (psycopg's errors) or a bug: tried again later
                self._close()
                self._failures += 1
                if self._failures == 1:
                    unreachable = isinstance(exc, psycopg.OperationalError)
                    logger.warning(
                        "claiming conversations from %s failed: %s",
                        self._sink.path,
                        exc,
                        exc_info=None if unreachable else exc,
                    )
                delay = backoff_delay(self._failures - 1, self._every_s, 30.0)
                continue
            self._failures = 0
            delay = self._every_s

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Stop claiming (what was graded stays for the last ``ready``)."""
        self._stop.set()
        self._thread.join()
        self._close()
