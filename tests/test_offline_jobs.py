"""``--jobs``: trace files read, rebuilt and graded in worker processes give the report one process
gives, byte for byte; files that share a trace are read together; a worker's failure names the file."""

from __future__ import annotations

import json
import os
import pickle
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otel_traj import offline_read
from otel_traj.adapters.files import TraceFileError
from otel_traj.cli import main
from otel_traj.offline import grade_runs, offline_config, read_runs
from otel_traj.offline_read import WorkerError, job_count, read_parts
from otel_traj.policy import load_policy

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
RECORDING = REAL / "pydantic_ai" / "violating.otlp.json"
OTHER = REAL / "openai_agents" / "clean.otlp.json"


@pytest.fixture(params=["alone", "beside a thread"])
def threads(request: pytest.FixtureRequest) -> Iterator[None]:
    """Alone, the workers are forked; beside a thread, they come from the fork server."""
    if request.param == "alone":
        yield
        return
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    yield
    stop.set()
    thread.join()


def grade(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["grade", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("report", ["json", "table"])
def test_the_real_fixtures_give_the_same_report_with_two_jobs(
    capsys: pytest.CaptureFixture[str], report: str, threads: None
) -> None:
    # Every recording is there as OTLP/JSON, protobuf and Jaeger (one trace in three files), and
    # two setups keep their GenAI events in a log records file of their own.
    args = (REAL, "--policy", POLICY, "--format", report, "-v")
    one = grade(capsys, *args, "--jobs", "1")
    two = grade(capsys, *args, "--jobs", "2")
    assert one[0] == two[0] == 1
    assert one[1] == two[1]
    assert one[2] == two[2]
    assert "GenAI events" in one[2]


def _split(recording: Path, first: Path, second: Path) -> int:
    """The recording's spans in two files, alternately; how many spans."""
    spans = [
        (resource, scope, span)
        for resource in json.loads(recording.read_text())["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]
    for path, share in ((first, spans[0::2]), (second, spans[1::2])):
        doc = [
            {
                "resource": r.get("resource", {}),
                "scopeSpans": [{"scope": s.get("scope", {}), "spans": [span]}],
            }
            for r, s, span in share
        ]
        path.write_text(json.dumps({"resourceSpans": doc}))
    return len(spans)


def test_a_trace_split_across_two_files_is_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], threads: None
) -> None:
    spans = _split(RECORDING, tmp_path / "a.json", tmp_path / "c.json")
    (tmp_path / "b.json").write_bytes(OTHER.read_bytes())
    split = grade(capsys, tmp_path, "--policy", POLICY, "--format", "json", "--jobs", "2")
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "a.json").write_bytes(RECORDING.read_bytes())
    (whole / "b.json").write_bytes(OTHER.read_bytes())
    single = grade(capsys, whole, "--policy", POLICY, "--format", "json", "--jobs", "1")
    assert spans > 2
    runs = json.loads(split[1])["trajectories"]
    assert len(runs) == 2
    assert split[1] == single[1]


def test_the_runs_read_by_workers_are_graded_there(tmp_path: Path) -> None:
    _split(RECORDING, tmp_path / "a.json", tmp_path / "c.json")
    (tmp_path / "b.json").write_bytes(OTHER.read_bytes())
    policy = load_policy(POLICY)
    runs = read_runs([tmp_path], policy=policy, jobs=2)
    assert runs.verdicts is not None and runs.graded_by is policy
    assert [v.trajectory.trace_id for v in runs.verdicts] == [t.trace_id for t in runs.trajectories]
    outcomes = [v.outcome for v in grade_runs(runs, policy=policy).verdicts]
    assert outcomes == [v.outcome for v in grade_runs(runs.trajectories, policy=policy).verdicts]
    assert [f.path.name for f in runs.inputs.files] == ["a.json", "b.json", "c.json"]


def test_one_job_or_one_file_starts_no_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pool(*args: Any) -> None:
        raise AssertionError("a pool was started")

    monkeypatch.setattr(offline_read, "_in_workers", no_pool)
    (tmp_path / "b.json").write_bytes(OTHER.read_bytes())
    assert len(read_runs([REAL / "pydantic_ai"], jobs=1).trajectories) == 2
    assert len(read_runs([tmp_path], jobs=4).trajectories) == 1


def test_an_unreadable_file_is_named_as_one_process_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.json").write_bytes(OTHER.read_bytes())
    (tmp_path / "b.json").write_text('{"resourceSpans": [')
    (tmp_path / "c.json").write_text("{")
    one = grade(capsys, tmp_path, "--jobs", "1")
    two = grade(capsys, tmp_path, "--jobs", "2")
    assert one == two
    assert one[0] == 2
    assert one[2].startswith(f"otel-traj: {tmp_path / 'b.json'}: invalid JSON")


class FailingPolicy:
    """A policy whose grading raises, in the worker process that unpickles it."""

    policy_version = None

    def resolve(self, trajectory: object) -> object:
        raise RuntimeError("the policy could not be resolved")


def test_an_error_in_a_worker_names_the_file(tmp_path: Path, threads: None) -> None:
    (tmp_path / "a.json").write_bytes(RECORDING.read_bytes())
    (tmp_path / "b.json").write_bytes(OTHER.read_bytes())
    with pytest.raises(WorkerError) as caught:
        read_parts([tmp_path], offline_config(None), FailingPolicy(), 2)  # type: ignore[arg-type]
    assert str(caught.value) == f"{tmp_path / 'a.json'}: RuntimeError: the policy could not be resolved"
    # The worker's own traceback is the cause.
    assert "raise RuntimeError" in str(caught.value.__cause__)


class ExitingPolicy:
    """A policy whose grading ends the worker process, as the kernel's OOM killer would."""

    policy_version = None

    def resolve(self, trajectory: object) -> object:
        os._exit(9)


def test_a_worker_that_stops_names_a_file(tmp_path: Path, threads: None) -> None:
    (tmp_path / "a.json").write_bytes(RECORDING.read_bytes())
    (tmp_path / "b.json").write_bytes(OTHER.read_bytes())
    with pytest.raises(WorkerError) as caught:
        read_parts([tmp_path], offline_config(None), ExitingPolicy(), 2)  # type: ignore[arg-type]
    assert str(caught.value).startswith(f"{tmp_path / 'a.json'}: a worker process stopped abruptly")


def test_errors_and_schemas_survive_pickling() -> None:
    error = pickle.loads(pickle.dumps(WorkerError("trace.json", "KeyError: 'x'")))
    assert isinstance(error, TraceFileError)
    assert (str(error), error.path, error.reason) == (
        "trace.json: KeyError: 'x'",
        Path("trace.json"),
        "KeyError: 'x'",
    )
    policy = pickle.loads(pickle.dumps(load_policy(POLICY)))
    contract = policy.agents["support_agent"].tools.contracts["check_payment"]
    assert contract.json_schema is not None
    assert (
        contract.json_schema.source
        == load_policy(POLICY).agents["support_agent"].tools.contracts["check_payment"].json_schema.source
    )  # type: ignore[union-attr]


def test_jobs_default_to_the_environment_then_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRAJ_JOBS", "3")
    assert job_count() == 3
    assert job_count(1) == 1
    monkeypatch.setenv("OTEL_TRAJ_JOBS", "0")
    monkeypatch.setattr(offline_read, "_cores", lambda: 4)
    assert job_count() == 4
    # One per core only where the input pays for the workers; a count given is always used.
    assert job_count(input_bytes=offline_read.AUTO_MIN_BYTES) == 4
    assert job_count(input_bytes=offline_read.AUTO_MIN_BYTES - 1) == 1
    assert job_count(2, input_bytes=1) == 2
    with pytest.raises(ValueError, match="jobs=-1"):
        job_count(-1)


def test_a_negative_jobs_flag_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["grade", str(RECORDING), "--jobs", "-1"])
    assert caught.value.code == 2
    assert "--jobs: '-1': expected an integer >= 0" in capsys.readouterr().err
