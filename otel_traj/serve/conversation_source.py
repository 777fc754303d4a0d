"""Where a service holds the conversations it grades (``--conversations-from``): in memory, from its
own traces (``traces``) or from the summaries other replicas' events carry (``logs``), or in the
fleet's PostgreSQL store, claimed by one replica when idle (``store``, ``sinks.store_claims``)."""

from __future__ import annotations

from collections.abc import Callable

from otel_traj.conversations import Conversations
from otel_traj.policy import Policy
from otel_traj.sinks.store import SqliteSink
from otel_traj.sinks.store_claims import StoreConversations
from otel_traj.sinks.store_postgres import PostgresSink
from otel_traj.stats import PipelineStats


def conversations_for(
    source: str,
    policy: Callable[[], Policy | None],
    stats: PipelineStats,
    store: SqliteSink | PostgresSink | None,
) -> Conversations:
    if source == "store":
        if not isinstance(store, PostgresSink):
            raise ValueError("--conversations-from store: the store must be a postgresql:// URL")
        return StoreConversations(policy, sink=store, stats=stats)
    return Conversations(policy, stats=stats, observe_traces=source != "logs")
