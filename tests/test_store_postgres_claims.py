"""Conversations across replicas through the PostgreSQL store: each replica writes the summaries of
the traces it graded under their conversation id; an idle conversation is claimed by one replica
(``FOR UPDATE SKIP LOCKED``), graded once from every replica's traces, as one process grades it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from otel_traj.conversations import ConversationVerdict
from otel_traj.conversations.serialize import conversation_to_dict
from otel_traj.policy import Policy, parse_policy
from otel_traj.serve.settings import ServeSettings
from otel_traj.sinks.store_claims import StoreConversations
from otel_traj.sinks.store_postgres import PostgresSink
from tests.conversation_runs import POLICY, conversation_runs, processed, recorded
from tests.serve_helpers import Served, wait_for


def quick_policy(idle_s: float) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(POLICY.read_text())
    document["defaults"]["conversation"]["idle_s"] = idle_s
    return document


def rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql.encode()).fetchall()


def graded(verdict: ConversationVerdict) -> dict[str, Any]:
    data = conversation_to_dict(verdict)
    return {key: data[key] for key in ("conversation_id", "trace_ids", "outcome", "score", "checks")}


def graded_here(replica: Served) -> float:
    """The conversations this replica graded (``otel_traj_conversations_total``, every label set)."""
    lines = replica.metrics().splitlines()
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith("otel_traj_conversations_total{")
    )


def test_an_idle_conversation_is_claimed_by_one_replica_and_graded_from_every_replicas_traces(
    postgres_url: str,
) -> None:
    policy: Policy = parse_policy(quick_policy(0.001))
    verdicts, in_memory = processed(policy, conversation_runs()[:3])
    sinks = [PostgresSink(url=postgres_url) for _ in range(2)]
    replicas = [StoreConversations(lambda: policy, sink=sink, every_s=3600.0) for sink in sinks]
    try:
        # The conversation's traces reached both replicas (routed by trace id).
        for i, verdict in enumerate(verdicts):
            replicas[i % 2].observe(verdict)
        assert all(sink.force_flush() for sink in sinks)
        assert rows(postgres_url, "SELECT count(*) FROM conversation_traces") == [(3,)]
        # A replica grading it holds its row: the other passes it by without waiting.
        with psycopg.connect(postgres_url) as holder, holder.transaction():
            holder.execute(b"SELECT 1 FROM open_conversations FOR UPDATE")
            assert replicas[1].claim() == 0
        assert [replicas[1].claim(), replicas[0].claim()] == [1, 0]
        [claimed] = replicas[1].ready()
        assert replicas[0].ready() == []
    finally:
        for replica in replicas:
            replica.close()
        for sink in sinks:
            sink.shutdown()
    assert graded(claimed) == graded(in_memory)
    assert claimed.outcome == "unsafe" and len(claimed.trace_ids) == 3
    [(stored,)] = rows(postgres_url, "SELECT verdict FROM conversations")
    assert json.loads(stored)["trace_ids"] == claimed.trace_ids
    assert rows(postgres_url, "SELECT count(*) FROM conversation_traces") == [(0,)]
    assert rows(postgres_url, "SELECT count(*) FROM open_conversations") == [(0,)]


def test_two_serve_replicas_grade_each_conversation_once_through_the_store(
    served: Callable[..., Served], postgres_url: str, tmp_path: Path
) -> None:
    policy = tmp_path / "conversations.yaml"
    policy.write_text(yaml.safe_dump(quick_policy(1.0)))
    flags = ("--policy", str(policy), "--store", postgres_url, "--conversations-from", "store")
    replicas = [served(*flags) for _ in range(2)]
    with recorded() as spans:
        traces: dict[int, list[Any]] = {}
        for span in spans:
            assert span.context is not None
            traces.setdefault(span.context.trace_id, []).append(span)
    for i, trace in enumerate(traces.values()):
        request = encode_spans(trace).SerializeToString()
        assert not replicas[i % 2].export_raw(request).HasField("partial_success")

    def both_graded() -> bool:
        return rows(postgres_url, "SELECT count(*) FROM conversations") == [(2,)]

    wait_for(both_graded, what="both conversations graded")
    # Graded once each (one row per conversation could also be a conversation graded twice alike):
    # the claims' verdicts reach /metrics on the replicas' next worker pass.
    wait_for(lambda: sum(graded_here(r) for r in replicas) >= 2, what="the verdicts on /metrics")
    assert sum(graded_here(replica) for replica in replicas) == 2
    assert [replica.stop() for replica in replicas] == [0, 0]
    stored = {
        data["conversation_id"]: data
        for (text,) in rows(postgres_url, "SELECT verdict FROM conversations")
        for data in [json.loads(text)]
    }
    assert {key: len(data["trace_ids"]) for key, data in stored.items()} == {
        "conv-switch": 3,
        "conv-clean": 2,
    }
    assert stored["conv-switch"]["outcome"] == "unsafe"
    assert rows(postgres_url, "SELECT count(*) FROM open_conversations") == [(0,)]


def test_conversations_from_the_store_need_a_postgresql_store(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="the store must be a postgresql:// URL"):
        ServeSettings(store=str(tmp_path / "verdicts.db"), conversations_from="store")
    assert (
        ServeSettings(store="postgresql://db/traj", conversations_from="store").conversations_from == "store"
    )
