"""The conversation tier of a fleet, with two ``serve`` processes: A grades the traces of multi-turn
conversations and exports its ``gen_ai.evaluation.result`` events (its Logs SDK's OTLP/HTTP exporter,
with B's bearer token) to B, started with ``--conversations-from logs``; B assembles the conversations
from the trace summaries those events carry and emits the conversation verdicts ``otel-traj grade``
gives for the same traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from otel_traj.sinks.evaluation_records import (
    CONVERSATION_ID,
    EVALUATION_NAME,
    EXPLANATION,
    OUTCOME,
    PREFIX,
    SCORE_LABEL,
    SCORE_VALUE,
    STEPS,
    TARGET,
)
from tests.conversation_runs import POLICY, write_otlp
from tests.otlp_logs_receiver import ReceivedEvent, logs_receiver
from tests.serve_helpers import Served, trace_ids_of
from tests.test_conversations import offline

TOKEN = "conversation-tier-token"


def offline_documents(path: Path) -> tuple[int, list[dict[str, Any]]]:
    """``otel-traj grade --format json``'s exit code and its "conversations"."""
    code, documents = offline(path)
    return code, cast(list[dict[str, Any]], documents)


def check_events_against(document: dict[str, Any], events: list[ReceivedEvent]) -> None:
    """The conversation's events say what its offline verdict says, check by check."""
    mine = {
        e.attributes[EVALUATION_NAME]: e
        for e in events
        if e.attributes[CONVERSATION_ID] == document["conversation_id"]
    }
    assert set(mine) == {OUTCOME, *(PREFIX + c["name"] for c in document["checks"])}
    outcome = mine[OUTCOME]
    assert outcome.attributes[SCORE_LABEL] == document["outcome"]
    assert outcome.attributes[SCORE_VALUE] == document["score"]
    assert outcome.trace_id == document["trace_ids"][-1]
    for check in document["checks"]:
        event = mine[PREFIX + check["name"]]
        assert event.attributes[SCORE_LABEL] == check["status"]
        assert event.attributes[EXPLANATION] == check["reason"]
        assert event.attributes.get(STEPS, []) == check["steps"]


def test_a_second_serve_grades_the_conversations_from_the_events_of_the_first(tmp_path: Path) -> None:
    path = write_otlp(tmp_path / "conversations.otlp.pb")
    code, documents = offline_documents(path)
    assert code == 1 and {d["conversation_id"] for d in documents} == {"conv-switch", "conv-clean"}
    with logs_receiver() as receiver:
        b = Served(
            tmp_path, "--policy", str(POLICY), "--conversations-from", "logs",
            "--emit-otel", receiver.url, "--auth-token", TOKEN, store=tmp_path / "b.db",
        )  # fmt: skip
        try:
            a = Served(
                tmp_path, "--policy", str(POLICY), "--conversations-from", "logs",
                "--emit-otel", f"http://127.0.0.1:{b.http_port}", store=tmp_path / "a.db",
                env={"OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer {TOKEN}"},
            )  # fmt: skip
            try:
                status, _, _ = a.post(path.read_bytes())
                assert status == 200
                graded = a.wait_verdicts(trace_ids_of(path.read_bytes()))
            finally:
                assert a.stop() == 0  # SIGTERM flushes A's events: B has every one before A exits
            assert len(graded) == 5
            # One summary per trace; every other record A sent is a check of a trace. A conversation
            # verdict of A's own (it must make none) would be more ignored records.
            assert b.metric("otel_traj_log_records_total", result="summary") == 5
            checks = sum(len(v["checks"]) for v in graded.values())
            assert b.metric("otel_traj_log_records_total", result="ignored") == checks
            for result in ("invalid", "no_conversation", "disabled"):
                assert b.metric("otel_traj_log_records_total", result=result) == 0, result
            assert b.metric("otel_traj_receiver_log_requests_total", transport="http", result="ok") >= 1
            assert (
                b.metric("otel_traj_receiver_log_requests_total", transport="http", result="unauthorized")
                == 0
            )
        finally:
            assert b.stop() == 0  # SIGTERM grades the open conversations and flushes B's events
    assert b.verdicts() == {}  # B received no traces
    events = [e for e in receiver.events if e.attributes[TARGET] == "conversation"]
    assert len(events) == len(receiver.events) == sum(len(d["checks"]) + 1 for d in documents)
    for document in documents:
        check_events_against(document, events)
    switch = next(d for d in documents if d["conversation_id"] == "conv-switch")
    assert switch["outcome"] == "unsafe" and len(switch["trace_ids"]) == 3


def test_a_replica_that_grades_conversations_from_its_traces_counts_received_summaries(
    tmp_path: Path,
) -> None:
    """The default (``--conversations-from traces``): the replica's own conversations only; summaries
    that reach it anyway are counted as disabled, and its conversation verdicts are the offline ones."""
    path = write_otlp(tmp_path / "conversations.otlp.pb")
    _, documents = offline_documents(path)
    with logs_receiver() as receiver:
        b = Served(tmp_path, "--policy", str(POLICY), "--emit-otel", receiver.url, store=tmp_path / "b.db")
        try:
            a = Served(
                tmp_path, "--policy", str(POLICY), "--conversations-from", "logs",
                "--emit-otel", f"http://127.0.0.1:{b.http_port}", store=tmp_path / "a.db",
            )  # fmt: skip
            try:
                assert a.post(path.read_bytes())[0] == 200
                a.wait_verdicts(trace_ids_of(path.read_bytes()))
            finally:
                assert a.stop() == 0
            assert b.metric("otel_traj_log_records_total", result="disabled") == 5
            assert b.metric("otel_traj_log_records_total", result="summary") == 0
            assert b.post(path.read_bytes())[0] == 200  # B's own traces of the same conversations
        finally:
            assert b.stop() == 0
    events = [e for e in receiver.events if e.attributes[TARGET] == "conversation"]
    assert len(events) == sum(len(d["checks"]) + 1 for d in documents)  # each conversation once
    for document in documents:
        check_events_against(document, events)
