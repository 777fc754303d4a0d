"""Conversation verdicts in the SQLite store: written by ``serve`` and by a ``SqliteSink`` under
``TrajectoryProcessor`` (the conversation runs' real SDK spans), redacted like verdicts, read back by
``otel-traj report --conversations`` with its filters, in the HTML reports, and a store of the
previous schema read as it is and migrated by its next writer."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from otel_traj import TrajectoryProcessor
from otel_traj.cli import main
from otel_traj.conversations import ConversationVerdict
from otel_traj.conversations.serialize import conversation_to_dict
from otel_traj.redact import Redactor
from otel_traj.sinks.store import SCHEMA_VERSION, SqliteSink, connect, read_verdicts
from otel_traj.sinks.store_conversations import read_conversations
from tests.conversation_runs import POLICY, recorded, redacting_policy, write_otlp
from tests.serve_helpers import Served, cli


def grade_into(store: Path, spans: list[ReadableSpan]) -> list[ConversationVerdict]:
    """The recorded spans through a processor writing to the store, as the SDK would call it."""
    policy = redacting_policy()
    got: list[ConversationVerdict] = []
    sink = SqliteSink(path=store, redact=policy.is_sensitive)
    processor = TrajectoryProcessor(policy=policy, sinks=[sink], on_conversation=got.append)
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        processor.on_start(span)  # type: ignore[arg-type]
    for span in sorted(spans, key=lambda s: s.end_time or 0):
        processor.on_end(span)
    processor.shutdown()  # grades the open conversations, then the store writes and closes
    return sorted(got, key=lambda v: v.start_ns)


@pytest.fixture(scope="module")
def spans() -> Iterator[list[ReadableSpan]]:
    with recorded() as finished:
        yield finished


def report(capsys: pytest.CaptureFixture[str], store: Path, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["report", "--store", str(store), "--conversations", *args])
    return code, capsys.readouterr().out


def test_conversations_are_stored_redacted_and_listed_with_the_report_filters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spans: list[ReadableSpan]
) -> None:
    store = tmp_path / "s.db"
    verdicts = grade_into(store, spans)
    redactor = Redactor(redacting_policy().is_sensitive)
    code, out = report(capsys, store, "--format", "json")
    assert code == 0
    stored = json.loads(out)["conversations"]
    assert stored == [conversation_to_dict(v, redactor) for v in verdicts]
    switch = stored[0]
    assert switch["conversation_id"] == "conv-switch" and switch["outcome"] == "unsafe"
    scope = next(c for c in switch["checks"] if c["name"] == "conversation_scope")
    assert "customer_id=[REDACTED]" in scope["reason"] and "C077" not in scope["reason"]
    code, out = report(capsys, store)
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["CONVERSATION", "AGENT", "OUTCOME"]
    assert lines[1].split()[:3] == ["conv-switch", "support_agent", "unsafe"]
    assert "conversation_scope, conversation_repeats" in lines[1]
    assert lines[-1] == "2 conversations: 1 unsafe, 1 pass"

    def ids(*args: str) -> list[str]:
        code, out = report(capsys, store, "--format", "json", *args)
        assert code == 0
        return [c["conversation_id"] for c in json.loads(out)["conversations"]]

    assert ids("--outcome", "unsafe") == ["conv-switch"]
    assert ids("--failed", "conversation_scope") == ["conv-switch"]
    assert ids("--failed", "conversation_budget") == []
    assert ids("--agent", "support_agent") == ["conv-switch", "conv-clean"]
    assert ids("--agent", "billing_agent") == []
    assert ids("--since", "1970-01-01T00:16:45") == ["conv-clean"]  # conv-clean starts 7 s later
    assert ids("--limit", "1") == ["conv-switch"]
    # The trajectories are still listed without the flag.
    assert main(["report", "--store", str(store)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "5 trajectories: 5 pass"


def test_serve_stores_the_conversations_it_grades(tmp_path: Path) -> None:
    path = write_otlp(tmp_path / "conversations.otlp.pb")
    served = Served(tmp_path, "--policy", str(POLICY))
    try:
        status, _, _ = served.post(path.read_bytes())
        assert status == 200
    finally:
        assert served.stop() == 0  # SIGTERM grades the open conversations and writes them
    result = cli("report", "--store", str(served.store), "--conversations", "--format", "json")
    assert result.returncode == 0, result.stderr
    offline = cli("grade", str(path), "--policy", str(POLICY), "--format", "json")
    assert json.loads(result.stdout)["conversations"] == json.loads(offline.stdout)["conversations"]


def test_a_conversation_graded_again_overwrites_its_row(tmp_path: Path, spans: list[ReadableSpan]) -> None:
    store = tmp_path / "s.db"
    grade_into(store, spans)
    grade_into(store, spans)
    with closing(connect(store, readonly=True)) as conn:
        assert [c["conversation_id"] for c in read_conversations(conn)] == ["conv-switch", "conv-clean"]


def test_a_version_2_store_is_read_as_it_is_and_migrated_by_its_next_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spans: list[ReadableSpan]
) -> None:
    store = tmp_path / "v2.db"
    grade_into(store, spans)
    with closing(sqlite3.connect(store)) as old:  # what version 2 wrote: no conversations table
        old.executescript("DROP TABLE conversations; PRAGMA user_version=2;")
    code, out = report(capsys, store)
    assert code == 0 and out.splitlines()[-1] == "0 conversations"
    with closing(connect(store, readonly=True)) as reader:
        assert reader.execute("PRAGMA user_version").fetchone()[0] == 2  # a reader does not migrate
        assert len(list(read_verdicts(reader))) == 5
    grade_into(store, spans)
    with closing(connect(store, readonly=True)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
        assert len(read_conversations(conn)) == 2 and len(list(read_verdicts(conn))) == 5


def test_the_html_reports_show_the_conversations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spans: list[ReadableSpan]
) -> None:
    store = tmp_path / "s.db"
    verdicts = grade_into(store, spans)
    page = tmp_path / "stored.html"
    code, _ = report(capsys, store, "--outcome", "unsafe", "--html", str(page))
    assert code == 0
    html = page.read_text()
    assert "5 trajectories" not in html and "3 trajectories, 1 conversation," in html
    assert 'class="traj conv" id="c0" data-outcome="unsafe"' in html and "conv-clean" not in html
    for trace in verdicts[0].trace_ids:  # every trace of the conversation links to its trajectory
        assert f'">{trace}</a>' in html
    assert "customer_id=[REDACTED]" in html and "customer_id=C077" not in html

    otlp = write_otlp(tmp_path / "conversations.otlp.pb")
    graded = tmp_path / "graded.html"
    result = cli("grade", str(otlp), "--policy", str(POLICY), "--html", str(graded))
    assert result.returncode == 1, result.stderr
    html = graded.read_text()
    assert "5 trajectories, 2 conversations" in html
    assert html.index("conv-switch") < html.index("conv-clean")  # worst outcome first
    assert "conversation_scope" in html and "customer_id=C077" in html  # grade redacts nothing
