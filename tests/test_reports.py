"""Reports: table, markdown (one row per trajectory x check), JUnit XML (parsed back), JSON."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from otel_traj.grader import Grader
from otel_traj.reports import RENDERERS, render
from otel_traj.reports.junit import render_junit
from otel_traj.verdict import CheckResult, Verdict
from tests.support_trajectories import clean_run, example_policy, violating_run

# The example policy runs 12 checks on every run (its sections and contracts).
CHECKS_PER_RUN = 12


def verdicts() -> list[Verdict]:
    grader = Grader(example_policy())
    violating = replace(violating_run(), trace_id=0xDEF)
    return [grader.grade(clean_run()), grader.grade(violating)]


def test_table_lists_outcomes_paths_and_failed_checks() -> None:
    text = render("table", verdicts())
    lines = text.splitlines()
    assert lines[0].split()[:5] == ["TRACE", "AGENT", "OUTCOME", "STAGE", "SCORE"]
    assert lines[1].split()[2:5] == ["pass", "-", "1.00"]
    assert lines[1].startswith("00000000000000000000000000000abc  support_agent  pass")
    row = next(line for line in lines if line.startswith("00000000000000000000000000000def"))
    assert row.split()[2:4] == ["unsafe", "parameters"]
    assert "get_subscription -> get_subscription -> list_invoices -> list_invoices" in text
    assert "    critical scope: list_invoices used customer_id=C028, subject is C023 [s3]" in lines
    assert lines[-1] == "2 trajectories: 1 unsafe, 1 pass"


def test_markdown_one_row_per_trajectory_and_check() -> None:
    text = render("markdown", verdicts())
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == 2 * CHECKS_PER_RUN
    scope_row = next(r for r in rows if "00000def" in r and "| scope |" in r)
    assert "❌ fail" in scope_row and "**unsafe**" in scope_row and "`s3`" in scope_row
    assert "list\\_invoices used customer\\_id=C028, subject is C023" in scope_row
    assert "Policy version `1@" in text


def test_markdown_escapes_table_breaking_text() -> None:
    [verdict] = verdicts()[:1]
    verdict = replace(
        verdict, checks=(CheckResult("claims", "fail", "critical", "answer says 'a | b'\nand <b>more</b>"),)
    )
    row = next(line for line in render("markdown", [verdict]).splitlines() if "| claims |" in line)
    assert "a \\| b" in row and "\\<b\\>" in row and "\n" not in row
    assert row.count(" | ") == 8  # nine cells, no extra column from the pipe in the reason


def test_junit_parses_and_counts() -> None:
    xml = render_junit(verdicts())
    root = ET.fromstring(xml)
    assert (
        root.tag == "testsuites"
        and root.get("tests") == str(2 * CHECKS_PER_RUN)
        and root.get("failures") == "2"
    )
    [suite] = root.findall("testsuite")
    assert suite.get("name") == "support_agent" and suite.get("failures") == "2"
    failures = [
        (case.get("name"), case.find("failure")) for case in suite if case.find("failure") is not None
    ]
    names = [name for name, _ in failures]
    assert names == ["scope", "repeats"]
    failure = failures[0][1]
    assert failure is not None and failure.get("type") == "critical"
    assert failure.get("message") == "list_invoices used customer_id=C028, subject is C023"
    assert "steps: s3" in (failure.text or "")


def test_junit_escapes_and_strips_invalid_characters() -> None:
    [verdict] = verdicts()[:1]
    checks = (
        CheckResult("claims", "fail", "critical", 'answer "x" <y> & z\x00\x1b'),
        CheckResult("grounded", "skipped", "error", "user input not captured"),
    )
    verdict = replace(verdict, checks=checks)
    root = ET.fromstring(render_junit([verdict], group=lambda v: "file.otlp.pb"))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "file.otlp.pb" and suite.get("skipped") == "1"
    failure = root.find(".//failure")
    assert failure is not None and failure.get("message") == 'answer "x" <y> & z\ufffd\ufffd'


def test_json_is_the_verdict_shape() -> None:
    data = json.loads(render("json", verdicts()))
    assert [t["outcome"] for t in data["trajectories"]] == ["pass", "unsafe"]
    first = data["trajectories"][0]
    assert first["score"] == 1.0 and len(first["checks"]) == CHECKS_PER_RUN
    assert first["tool_calls"][0]["name"] == "get_subscription"


def test_unknown_format() -> None:
    assert set(RENDERERS) == {"table", "json", "markdown", "junit"}
    with pytest.raises(ValueError, match="unknown report format 'html'"):
        render("html", [])
