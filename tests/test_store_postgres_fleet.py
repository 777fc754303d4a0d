"""The fleet store end to end: two ``otel-traj serve`` processes writing one PostgreSQL database (a
trace sent to both stored once, ``/healthz`` saying the store's state), and ``grade --store URL``
then ``report --store URL`` (runs, conversations, the HTML report) reading what SQLite would give."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from otel_traj.cli import main
from otel_traj.sinks.store_reader import open_store
from tests.conversation_runs import POLICY as CONVERSATION_POLICY
from tests.conversation_runs import write_otlp
from tests.serve_helpers import FIXTURES, POLICY, Served, trace_ids_of


def health(server: Served) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/healthz", timeout=10) as reply:
        assert reply.status == 200
        return str(reply.read().decode())


def test_two_serve_replicas_write_one_database_and_a_trace_sent_to_both_is_stored_once(
    served: Callable[..., Served], postgres_url: str
) -> None:
    replicas = [served("--policy", str(POLICY), "--store", postgres_url) for _ in range(2)]
    files = sorted(FIXTURES.glob("*/clean.otlp.pb"))[:4] + sorted(FIXTURES.glob("*/violating.otlp.pb"))[:4]
    expected: set[str] = set()
    for i, path in enumerate(files):
        data = path.read_bytes()
        expected |= trace_ids_of(data)
        # Every file to one replica by turns, the first two to both (a retry that reached another).
        targets = replicas if i < 2 else [replicas[i % 2]]
        for replica in targets:
            assert not replica.export_raw(data).HasField("partial_success")
    for replica in replicas:
        assert health(replica).startswith("ok\nstore: up, ")
    assert [replica.stop() for replica in replicas] == [0, 0]
    store = open_store(postgres_url)
    try:
        stored = store.verdicts()
    finally:
        store.close()
    assert sorted(v["trace_id"] for v in stored) == sorted(expected)


def _json(out: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(out)
    return document


def test_grade_store_url_then_report_reads_runs_conversations_and_html_as_sqlite(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = write_otlp(tmp_path / "conversations.otlp.pb")
    reports = []
    for store in (str(tmp_path / "verdicts.db"), postgres_url):
        grade = ["grade", str(traces), "--policy", str(CONVERSATION_POLICY), "--store", store]
        assert main([*grade, "--format", "json"]) == 1
        assert "otel-traj: store: 5 verdicts written to " in capsys.readouterr().err
        assert main(["report", "--store", store, "--format", "json"]) == 0
        runs = _json(capsys.readouterr().out)["trajectories"]
        html = tmp_path / "conversations.html"
        flags = ["--conversations", "--failed", "conversation_scope", "--format", "json", "--html", str(html)]
        assert main(["report", "--store", store, *flags]) == 0
        talks = _json(capsys.readouterr().out)["conversations"]
        reports.append((runs, talks, html.read_text().count('<section class="traj"')))
    assert reports[0] == reports[1]
    runs, talks, cards = reports[1]
    assert len(runs) == 5
    assert [(c["conversation_id"], c["outcome"]) for c in talks] == [("conv-switch", "unsafe")]
    assert cards == len(talks[0]["trace_ids"]) >= 2
