"""``otel-traj grade`` on inputs that hold no trajectory: exit 2 and name what was skipped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from otel_traj.cli import main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "real" / "openai_agents"
HTTP_SPAN = {
    "traceId": "5b8efff798038103d269b633813fc60c",
    "spanId": "eee19b7ec3c1b173",
    "name": "GET /health",
    "startTimeUnixNano": "1000",
    "endTimeUnixNano": "2000",
}
NOT_GENAI = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [HTTP_SPAN]}]}]})


def grade(*args: str | Path) -> int:
    return main(["grade", *map(str, args)])


def test_an_empty_directory_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert grade(tmp_path) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"no trajectory to grade: no files in {tmp_path}" in err


def test_a_directory_of_other_files_names_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for n in range(5):
        (tmp_path / f"config{n}.json").write_text('{"framework": "x"}')
    (tmp_path / "notes.txt").write_text("not a trace")
    assert grade(tmp_path) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "skipped 6 files" in err
    assert f"{tmp_path / 'config0.json'}, {tmp_path / 'config1.json'}, {tmp_path / 'config2.json'}" in err
    assert "and 3 more" in err and "-v lists each and why" in err
    assert "config3.json" not in err


def test_node_modules_directories_are_not_searched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(FIXTURES / "clean.otlp.pb", tmp_path / "clean.otlp.pb")
    package = tmp_path / "js" / "node_modules" / "protobufjs"
    package.mkdir(parents=True)
    (package / "tsconfig.json").write_text('{\n  // comments: not JSON\n  "strict": true\n}\n')
    assert grade(tmp_path, "--format", "json") == 0
    assert len(json.loads(capsys.readouterr().out)["trajectories"]) == 1
    # Named explicitly, the file is read (and is no trace file).
    assert grade(tmp_path / "clean.otlp.pb", package / "tsconfig.json") == 2


def test_verbose_says_why_each_file_was_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run.facts.json").write_text('{"framework": "x"}')
    (tmp_path / "run.spans.txt").write_text("not a trace")
    (tmp_path / "http.otlp.json").write_text(NOT_GENAI)
    assert grade(tmp_path, "-v") == 2
    lines = capsys.readouterr().err.splitlines()
    assert f"otel-traj: skipped {tmp_path / 'http.otlp.json'}: no GenAI spans" in lines
    assert any(
        line.startswith(f"otel-traj: skipped {tmp_path / 'run.facts.json'}: not a trace file: JSON object")
        for line in lines
    )
    assert any(
        line.startswith(f"otel-traj: skipped {tmp_path / 'run.spans.txt'}: not a trace file name")
        for line in lines
    )
    assert "skipped 3 files" in lines[-1] and "-v lists" not in lines[-1]


def test_a_trace_without_genai_spans_given_directly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "http.otlp.json"
    trace.write_text(NOT_GENAI)
    assert grade(trace) == 2
    err = capsys.readouterr().err
    assert f"skipped 1 file: {trace} (no GenAI spans)" in err


def test_verbose_lists_skipped_files_beside_graded_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(FIXTURES / "clean.otlp.pb", tmp_path)
    (tmp_path / "http.otlp.json").write_text(NOT_GENAI)
    (tmp_path / "run.facts.json").write_text('{"framework": "x"}')
    assert grade(tmp_path, "--verbose", "--format", "json") == 0
    out, err = capsys.readouterr()
    assert len(json.loads(out)["trajectories"]) == 1
    assert f"otel-traj: read {tmp_path / 'clean.otlp.pb'}: otlp-protobuf, 15 spans" in err
    assert f"otel-traj: skipped {tmp_path / 'http.otlp.json'}: no GenAI spans" in err
    assert f"otel-traj: skipped {tmp_path / 'run.facts.json'}: not a trace file" in err
    assert "no trajectory to grade" not in err


def test_without_verbose_graded_runs_keep_stderr_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(FIXTURES / "clean.otlp.pb", tmp_path)
    (tmp_path / "run.facts.json").write_text('{"framework": "x"}')
    assert grade(tmp_path, "--format", "json") == 0
    assert capsys.readouterr().err == ""


def test_verbose_counts_the_spans_it_could_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A span whose id is not hex is not read: ``-v`` counts it beside the file's spans, so a run
    missing it is not taken for all there was."""
    span = {
        **HTTP_SPAN,
        "name": "chat",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}],
    }
    unread = {**span, "spanId": "not-hex-at-all"}
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span, unread]}]}]}
    (tmp_path / "run.otlp.json").write_text(json.dumps(doc))
    assert grade(tmp_path / "run.otlp.json", "-v") == 0
    err = capsys.readouterr().err
    assert "otlp-json, 1 spans, 1 malformed spans not read" in err
