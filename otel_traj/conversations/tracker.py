"""Conversations in flight: summaries of their graded traces, bounded in count and bytes, graded once
no trace of them arrived for the policy's ``idle_s`` (and all at once on flush and shutdown).

Thread-safe: the pipeline's worker adds the traces it grades, a receiver the summaries other
replicas send in their evaluation events.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from otel_traj import env
from otel_traj.conversations.grade import agent_policy, grade_with_policy
from otel_traj.conversations.summary import TraceSummary, summarize
from otel_traj.conversations.verdict import ConversationVerdict
from otel_traj.policy import Policy
from otel_traj.stats import PipelineStats
from otel_traj.verdict import Verdict

DROPPED = "max_conversations"
# Open conversations whose agent's policy, reloaded, no longer has a ``conversation`` section.
NO_RULES = "conversation_rules_removed"

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Open:
    idle_s: float
    last: float
    traces: dict[str, TraceSummary] = field(default_factory=dict)
    size: int = 0


def conversation_summary(policy: Policy | None, verdict: Verdict) -> tuple[TraceSummary, float] | None:
    """A graded trace's summary and its conversation's ``idle_s``, when the trace has a conversation id
    and its agent's policy a ``conversation`` section; else None."""
    if policy is None or not verdict.trajectory.conversation_id:
        return None
    rules = policy.resolve(verdict.trajectory)
    if rules.conversation is None:
        return None
    summary = summarize(verdict, rules)
    return (summary, rules.conversation.idle_s) if summary is not None else None


class Conversations:
    """``observe`` each graded verdict (or ``add`` a summary); ``ready`` returns the verdicts of the
    conversations that went idle, and of those the bounds made leave early (``complete`` False,
    counted in ``dropped{reason="max_conversations"}``).

    policy: returns the policy in force (``serve`` reloads it). max_conversations / max_bytes:
    ``OTEL_TRAJ_MAX_CONVERSATIONS`` (10,000) / ``OTEL_TRAJ_CONVERSATION_MAX_BYTES`` (64 MiB).
    observe_traces: False where conversations are assembled from summaries other replicas send
    (``serve --conversations-from logs``): ``observe`` then keeps nothing, so no conversation is
    graded twice, or in part from the traces that happened to reach this replica.
    """

    def __init__(
        self,
        policy: Callable[[], Policy | None],
        *,
        max_conversations: int | None = None,
        max_bytes: int | None = None,
        stats: PipelineStats | None = None,
        clock: Callable[[], float] = time.monotonic,
        observe_traces: bool = True,
    ) -> None:
        self._policy = policy
        self.observe_traces = observe_traces
        self.max_conversations = env.COUNT.require(
            "max_conversations",
            max_conversations if max_conversations is not None else env.MAX_CONVERSATIONS.read(),
        )
        self.max_bytes = env.COUNT.require(
            "max_bytes", max_bytes if max_bytes is not None else env.CONVERSATION_MAX_BYTES.read()
        )
        self.stats = stats if stats is not None else PipelineStats()
        self._clock = clock
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._evicted: list[list[TraceSummary]] = []
        self._bytes = 0
        # The shortest idle_s seen: entries are in order of last activity, so a scan for idle ones
        # stops at the first entry more recent than that.
        self._min_idle = float("inf")
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._open)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def observe(self, verdict: Verdict) -> None:
        """A graded trace: kept when its agent's policy has a ``conversation`` section."""
        if not self.observe_traces:
            return
        held = conversation_summary(self._policy(), verdict)
        if held is not None:
            self._add(*held)

    def add(self, summary: TraceSummary) -> bool:
        """A summary of a trace graded elsewhere; False when its agent's policy has no conversation."""
        policy = self._policy()
        rules = agent_policy(policy, summary).conversation if policy is not None else None
        if rules is None:
            return False
        self._add(summary, rules.idle_s)
        return True

    def _add(self, summary: TraceSummary, idle_s: float) -> None:
        now = self._clock()
        size = summary.size_bytes
        with self._lock:
            entry = self._open.get(summary.conversation_id)
            if entry is None:
                entry = self._open[summary.conversation_id] = _Open(idle_s=idle_s, last=now)
                self._min_idle = min(self._min_idle, idle_s)
            previous = entry.traces.get(summary.trace_id)
            if previous is not None:
                # Graded again (sent twice): the newer verdict replaces it.
                entry.size -= previous.size_bytes
                self._bytes -= previous.size_bytes
            entry.traces[summary.trace_id] = summary
            entry.size += size
            self._bytes += size
            entry.last = now
            self._open.move_to_end(summary.conversation_id)
            while len(self._open) > self.max_conversations or (self._bytes > self.max_bytes and self._open):
                _, oldest = self._open.popitem(last=False)
                self._bytes -= oldest.size
                self._evicted.append(list(oldest.traces.values()))
                self.stats.count_dropped(DROPPED)

    def close(self) -> None:
        """Stop what holds conversations elsewhere (a store's claims); nothing to stop in memory."""

    def ready(self, flush: bool = False) -> list[ConversationVerdict]:
        """Verdicts of the conversations idle now (every one with ``flush``) and of those evicted."""
        now = self._clock()
        done: list[tuple[list[TraceSummary], bool]] = []
        with self._lock:
            evicted, self._evicted = self._evicted, []
            done.extend((traces, False) for traces in evicted)
            idle: list[str] = []
            for key, entry in self._open.items():
                if flush or now - entry.last >= entry.idle_s:
                    idle.append(key)
                elif now - entry.last < self._min_idle:
                    break
            for key in idle:
                entry = self._open.pop(key)
                self._bytes -= entry.size
                done.append((list(entry.traces.values()), True))
        policy = self._policy()
        verdicts: list[ConversationVerdict] = []
        for traces, complete in done:
            try:
                verdict = grade_with_policy(policy, traces, complete=complete) if policy is not None else None
            except Exception:
                # Lost to a bug of ours: counted, and the other conversations of the round still graded.
                self.stats.count_failed_run()
                logger.exception("grading conversation %r failed", traces[0].conversation_id)
                continue
            if verdict is None:
                self.stats.count_dropped(NO_RULES)
            else:
                verdicts.append(verdict)
        return verdicts
