"""``otel-traj policy suggest`` on the real framework traces and on a store: suggest -> check -> grade,
the same policy from the files and from the verdicts stored for them, and clear refusals."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.cli import main
from otel_traj.config import AssemblerConfig
from otel_traj.grader import Grader
from otel_traj.offline import trajectories_from_views
from otel_traj.policy.suggest import succeeded
from otel_traj.sinks.store import connect, write_verdicts
from otel_traj.trajectory import Trajectory
from tests.real_frameworks import FRAMEWORKS
from tests.suggest_traffic import percentile

ROOT = Path(__file__).resolve().parent.parent
# Every recorded run: its trace and, where the instrumentation writes the messages as log records, those.
REAL = sorted(
    str(p)
    for pattern in ("*/*.otlp.pb", "*/*.logs.json")
    for p in (ROOT / "tests" / "fixtures" / "real").glob(pattern)
)
SUBJECT = ["--subject-attribute", "app.customer_id"]
MIN_RUNS = ["--min-runs", "10"]


def _successful(framework: str) -> int:
    """Successful runs of a framework setup: the violating one; the clean one too when neither a tool
    span nor the request that sends its result back shows its failed call."""
    recorded = FRAMEWORKS[framework]
    return 2 if recorded.tool is None and not recorded.request_failures else 1


# Two runs per framework setup. The runs of setups that name the agent are support_agent's; the
# others' are named after their services, too few each to suggest rules for.
NAMED = [f for f, r in FRAMEWORKS.items() if r.agent is not None and r.agent_named and not r.agent_alias]
AGENT_RUNS = 2 * len(NAMED)
AGENT_OK = sum(_successful(f) for f in NAMED)
# The other setups' agents, as their runs name them, and their successful runs.
UNNAMED = {
    FRAMEWORKS[f].agent_alias or f"support-agent-{f}": _successful(f) for f in FRAMEWORKS if f not in NAMED
}


def _suggest(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["policy", "suggest", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def real_runs() -> list[Trajectory]:
    views = read_trace_inputs(REAL).views
    return trajectories_from_views(views, AssemblerConfig().with_capture(("app.customer_id",)))


def test_suggest_check_grade_on_the_real_frameworks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_runs: list[Trajectory]
) -> None:
    policy = tmp_path / "suggested.yaml"
    code, out, err = _suggest(capsys, *REAL, *MIN_RUNS, *SUBJECT, "--out", str(policy))
    assert code == 0, err
    assert out == ""
    assert f"suggested rules for support_agent ({AGENT_OK} of {AGENT_RUNS} runs succeeded)" in err
    for agent, ok in UNNAMED.items():
        assert f"agent {agent}: {ok} successful runs of 2, fewer than --min-runs 10" in err

    assert main(["policy", "check", str(policy)]) == 0
    assert "valid policy version" in capsys.readouterr().out

    report = tmp_path / "report.json"
    main(["grade", *REAL, "--policy", str(policy), "--format", "json", "--out", str(report)])
    capsys.readouterr()
    graded = json.loads(report.read_text())["trajectories"]
    ok_runs = [
        v
        for v in graded
        if v["final_answer"] and all(c["ok"] for c in v["tool_calls"] if c["kind"] == "tool")
    ]
    assert len(ok_runs) == AGENT_OK + sum(UNNAMED.values())
    for verdict in ok_runs:
        budget = [c for c in verdict["checks"] if c["name"] == "budget"]
        assert not budget or budget[0]["status"] != "fail", budget

    # The numbers are the formula over the successful runs of support_agent.
    good = [r for r in real_runs if r.agent == "support_agent" and succeeded(r)]
    turns = [Fraction(r.model_turns) for r in good]
    text = policy.read_text()
    assert f"max_model_turns: {math.ceil(Fraction(3, 2) * percentile(turns, 90))}  #" in text
    tokens = [Fraction(r.tokens.total) for r in good]
    # Raised to the largest successful run when one exceeds 1.5 x p90.
    budget = max(math.ceil(Fraction(3, 2) * percentile(tokens, 90)), math.ceil(max(tokens)))
    assert f"max_total_tokens: {budget}  #" in text


def test_the_same_runs_from_the_store_give_the_same_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_runs: list[Trajectory]
) -> None:
    store = tmp_path / "verdicts.db"
    conn = connect(store)
    write_verdicts(conn, Grader().grade_all(real_runs))
    conn.close()
    code, from_files, _ = _suggest(capsys, *REAL, *MIN_RUNS, *SUBJECT)
    assert code == 0
    code, from_store, err = _suggest(capsys, "--store", str(store), *MIN_RUNS, *SUBJECT)
    assert code == 0, err
    assert from_store == from_files
    assert "scope:" in from_store and "get_subscription:" in from_store

    code, _, err = _suggest(capsys, "--store", str(store), *MIN_RUNS, "--agent", "billing_agent")
    assert code == 2
    assert "no agent has 10 successful runs in 0 runs: no policy" in err
    code, _, err = _suggest(capsys, "--store", str(store), *MIN_RUNS, "--since", "2200-01-01T00:00:00")
    assert code == 2 and "in 0 runs" in err


def test_a_damaged_stored_verdict_is_named_with_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_runs: list[Trajectory]
) -> None:
    store = tmp_path / "verdicts.db"
    conn = connect(store)
    write_verdicts(conn, Grader().grade_all(real_runs[:1]))
    trace = real_runs[0].trace_hex
    with conn:
        conn.execute("UPDATE trajectories SET verdict = json_set(verdict, '$.tool_calls[0].ok', 'maybe')")
    conn.close()
    code, out, err = _suggest(capsys, "--store", str(store))
    assert code == 2 and out == ""
    assert f"otel-traj: {store}: trace {trace}: tool_calls.0.ok: Input should be a valid boolean" in err


def test_the_same_input_gives_the_same_text(capsys: pytest.CaptureFixture[str]) -> None:
    first = _suggest(capsys, *REAL, *MIN_RUNS)
    assert first[0] == 0
    assert _suggest(capsys, *reversed(REAL), *MIN_RUNS)[1] == first[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [*REAL],
            f"agent support_agent: {AGENT_OK} successful runs of {AGENT_RUNS}, fewer than --min-runs "
            f"{AGENT_OK + 1}: left out",
        ),
        (["--since", "yesterday", *REAL], "--since 'yesterday': expected a duration like 1h"),
        (["--subject-pattern", "C(", *REAL], "--subject-pattern 'C(': invalid regular expression"),
        (["--percentile", "100", *REAL], "percentile must be from 1 to 99 (got 100)"),
        (["--store", "/nonexistent/verdicts.db"], "/nonexistent/verdicts.db: no such store"),
    ],
)
def test_refusals_exit_2_and_say_why(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    extra = ["--min-runs", str(AGENT_OK + 1)] if args == REAL else []
    code, out, err = _suggest(capsys, *args, *extra)
    assert code == 2 and out == ""
    assert message in err


def test_an_unreadable_trace_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    code, _, err = _suggest(capsys, str(broken))
    assert code == 2
    assert str(broken) in err


def test_a_store_that_is_not_sqlite_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "verdicts.db"
    store.write_text("not a database")
    code, _, err = _suggest(capsys, "--store", str(store))
    assert code == 2
    assert f"otel-traj: {store}: file is not a database" in err


def test_the_documented_excerpt_is_what_the_command_writes(capsys: pytest.CaptureFixture[str]) -> None:
    page = (ROOT / "docs" / "policy.md").read_text(encoding="utf-8")
    section = page[page.index("## Start from your traffic") :]
    excerpt = section[section.index("```yaml\n") + len("```yaml\n") :]
    excerpt = excerpt[: excerpt.index("```")]
    code, out, _ = _suggest(capsys, *REAL, *MIN_RUNS, *SUBJECT)
    assert code == 0
    assert out.startswith(excerpt)
