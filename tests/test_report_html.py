"""The HTML report: rendered from real verdicts (spans -> TrajectoryProcessor -> example policy), the
same from the SQLite store, self-contained, and checked in Debian's headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from otel_traj.cli import main
from otel_traj.processor import TrajectoryProcessor
from otel_traj.reports.html import render_html, write_html
from otel_traj.serialize import verdict_to_dict
from otel_traj.sinks.store import SqliteSink, connect, read_verdicts
from otel_traj.verdict import Verdict
from tests.installed import not_installed
from tests.semconv_agent import INVOICES, Call, Run, Turn, clean_refund, emit
from tests.support_trajectories import EXAMPLE_POLICY

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
MOMENT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HOSTILE = "<script>alert(1)</script> charged twice"


def violating_refund() -> Run:
    """Repeated lookup, another customer's invoices, and markup in a tool argument."""
    return Run(
        user="Customer C023 here. I was charged twice for invoice INV-1002, please refund the 199 yuan.",
        conversation_id="conv-violating",
        root_attributes={"app.customer_id": "C023"},
        start_ns=2_000_000_000_000,
        turns=[
            Turn(calls=[Call("get_subscription", {"customer_id": "C023"}, {"plan": "pro"})]),
            Turn(calls=[Call("get_subscription", {"customer_id": "C023"}, {"plan": "pro"})]),
            Turn(
                calls=[
                    Call("list_invoices", {"customer_id": "C028"}, [{"invoice_id": "INV-2001"}]),
                    Call("list_invoices", {"customer_id": "C023"}, INVOICES),
                ]
            ),
            Turn(
                calls=[
                    Call(
                        "create_refund_request",
                        {"invoice_id": "INV-1002", "amount_yuan": 199, "reason": HOSTILE},
                        {"refund_id": "RF-5001", "status": "submitted"},
                    )
                ]
            ),
            Turn(text="Your refund for INV-1002 has been submitted (RF-5001)."),
        ],
    )


def graded(tmp_path: Path) -> tuple[list[Verdict], Path]:
    """Grade both runs in process, storing the verdicts in a SQLite store as well."""
    verdicts: list[Verdict] = []
    db = tmp_path / "verdicts.db"
    processor = TrajectoryProcessor(
        policy=EXAMPLE_POLICY, sinks=[SqliteSink(path=db)], on_verdict=verdicts.append
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "support-svc"}))
    provider.add_span_processor(processor)
    try:
        tracer = provider.get_tracer("test")
        emit(tracer, clean_refund())
        emit(tracer, violating_refund())
    finally:
        provider.shutdown()
    return sorted(verdicts, key=lambda v: v.trajectory.start_ns), db


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Path, str]:
    tmp = tmp_path_factory.mktemp("html")
    verdicts, db = graded(tmp)
    dicts = [verdict_to_dict(v) for v in verdicts]
    return dicts, db, render_html(dicts, title="Support runs", generated_at=MOMENT)


def test_the_runs_graded_as_expected(report: tuple[list[dict[str, Any]], Path, str]) -> None:
    dicts, _, _ = report
    assert [d["outcome"] for d in dicts] == ["pass", "unsafe"]
    failing = [{c["name"] for c in d["checks"] if c["status"] == "fail"} for d in dicts]
    assert failing == [set(), {"scope", "repeats"}]


def test_store_renders_the_same_report(report: tuple[list[dict[str, Any]], Path, str]) -> None:
    _, db, html = report
    with connect(db, readonly=True) as conn:
        stored = list(read_verdicts(conn))
    assert render_html(stored, title="Support runs", generated_at=MOMENT) == html


def test_self_contained_and_escaped(report: tuple[list[dict[str, Any]], Path, str]) -> None:
    _, _, html = report
    assert not re.search(r"https?://", html)
    assert not re.search(r"""(src|href)\s*=""", html)
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; charged twice" in html
    assert html.count("<script>") == 1  # the report's own inline script only


def _bars(section: str) -> list[tuple[str, float, float]]:
    """(label, left %, right %) of every timeline row in one trajectory section."""
    rows = re.findall(
        r'<div class="lbl"><span class="num">#\d+</span>([^<]+)(?:<span class="par"[^>]*>[^<]*</span>)?</div>'
        r'<div class="track"><div class="bar" tabindex="0" style="left:([\d.]+)%;width:([\d.]+)%">',
        section,
    )
    return [(name, float(left), float(left) + float(width)) for name, left, width in rows]


def _rows(section: str) -> list[tuple[str, str, list[str]]]:
    """(classes, label, tagged checks) of every timeline row."""
    rows = []
    for chunk in section.split('<div class="row ')[1:]:
        classes, label = re.match(r'([^"]+)".*?<span class="num">#\d+</span>([^<]+)', chunk, re.S).groups()
        tags = re.findall(r'<span class="tag \w+">(\w+)</span>', chunk.split('<div class="axis">')[0])
        rows.append((f"row {classes}", label, tags))
    return rows


def test_timeline_orders_steps_and_overlaps_parallel_calls(
    report: tuple[list[dict[str, Any]], Path, str],
) -> None:
    _, _, html = report
    [unsafe] = re.findall(r'<section class="traj"[^>]*data-outcome="unsafe".*?</section>', html, re.S)
    bars = _bars(unsafe)
    assert [name for name, _, _ in bars] == [
        "turn 1",
        "get_subscription",
        "turn 2",
        "get_subscription",
        "turn 3",
        "list_invoices",
        "list_invoices",
        "turn 4",
        "create_refund_request",
        "turn 5",
    ]
    assert all(left >= 0 and right <= 100.001 for _, left, right in bars)
    (_, a_left, a_right), (_, b_left, b_right) = bars[5], bars[6]
    assert b_left < a_right and a_left < b_right, "parallel calls must overlap on the timeline"
    assert unsafe.count('title="ran in parallel"') == 2
    # The foreign lookup is flagged by scope, the repeated lookup by repeats.
    flagged = [row for row in _rows(unsafe) if "flagged" in row[0]]
    assert flagged == [
        ("row tool flagged warning", "get_subscription", ["repeats"]),
        ("row tool flagged", "list_invoices", ["scope"]),
    ]
    assert "customer_id=C028" in unsafe  # the check's reason


def test_summary_counts_outcomes(report: tuple[list[dict[str, Any]], Path, str]) -> None:
    _, _, html = report
    assert '<button class="stat" data-outcome=""><b>2</b><span>trajectories</span>' in html
    assert re.search(r'data-outcome="unsafe"[^>]*><b>1</b><span>unsafe</span>', html)
    assert re.search(r'data-outcome="pass"[^>]*><b>1</b><span>pass</span>', html)
    assert "Failing checks: scope x1, repeats x1" in html


def test_worst_outcome_first_and_empty_input(report: tuple[list[dict[str, Any]], Path, str]) -> None:
    _, _, html = report
    assert html.index('data-outcome="unsafe" style') < html.index('data-outcome="pass" style')
    empty = render_html([], generated_at=MOMENT)
    assert "0 trajectories" in empty and "Failing checks: none" in empty


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}",
        "--window-size=1280,2000",
    ]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120, check=True)


def test_chromium_renders_the_report(report: tuple[list[dict[str, Any]], Path, str], tmp_path: Path) -> None:
    if shutil.which(CHROMIUM) is None:
        not_installed("Debian's chromium", "apt-get install chromium")
    dicts, _, _ = report
    page = write_html(tmp_path / "report.html", dicts, title="Support runs")
    url = page.resolve().as_uri()
    shot = tmp_path / "report.png"
    _chromium(tmp_path, f"--screenshot={shot}", url)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    dom = _chromium(tmp_path, "--dump-dom", url).stdout
    assert dom.count('class="timeline"') == 2
    assert dom.count('class="row tool') == 4 + 5
    assert re.search(r'<tr class="check fail"><td class="st fail">fail</td><td><b>scope</b>', dom)
    assert "list_invoices used customer_id=C028" in dom
    assert re.search(r'<tr class="check fail warning">.*?<b>repeats</b>', dom)
    # The clean run's failing payment lookup is a tool error, not a failed check.
    assert re.search(r'<div class="row tool error"[^>]*><div class="lbl">.*?check_payment', dom)
    passed = sum(1 for d in dicts for c in d["checks"] if c["status"] == "pass")
    assert dom.count('<tr class="check pass">') == passed > 10


def test_report_command_writes_the_html(
    report: tuple[list[dict[str, Any]], Path, str], tmp_path: Path
) -> None:
    _, db, _ = report
    out = tmp_path / "from-store.html"
    assert main(["report", "--store", str(db), "--html", str(out)]) == 0
    html = out.read_text()
    assert html.count('<section class="traj"') == 2 and "list_invoices used customer_id=C028" in html


def test_grade_command_writes_the_html(tmp_path: Path) -> None:
    out = tmp_path / "graded.html"
    fixtures = ROOT / "tests" / "fixtures" / "real" / "openai_agents"
    code = main(["grade", str(fixtures), "--policy", str(EXAMPLE_POLICY), "--html", str(out)])
    assert code == 1  # the violating run is unsafe
    html = out.read_text()
    assert html.count('<section class="traj"') == 2
    assert re.search(r'data-outcome="unsafe"[^>]*><b>1</b>', html)
    assert re.search(r'data-outcome="pass"[^>]*><b>1</b>', html)


def test_unwritable_html_path_is_an_input_error(tmp_path: Path) -> None:
    fixtures = ROOT / "tests" / "fixtures" / "real" / "openai_agents"
    target = tmp_path / "missing-dir" / "r.html"
    assert main(["grade", str(fixtures), "--html", str(target)]) == 2
