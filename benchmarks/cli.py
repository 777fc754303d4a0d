"""Wall time of the ``otel-traj`` command, against the bare interpreter and against agentevals-cli.

Every command runs in a fresh process, once per round, the commands in turn; reported is the median
(and the fastest) wall time over the rounds, since one run on a busy 2-core machine says little:

- ``python -c pass``: the interpreter's own start, the floor under every command;
- ``python -c "import otel_traj"``;
- the policy's pydantic models imported and built (what validating a policy pays before it starts);
- ``otel-traj --version`` and ``otel-traj policy check examples/policies/support_agent.yaml``:
  target at most 150 ms each;
- ``otel-traj grade FILES --policy examples/policies/support_agent.yaml`` against
  ``agentevals run FILES --eval-set EVALSET`` (agentevals-cli 0.11.0): target otel-traj at least 10x
  faster; ``grade`` reads with one worker process per core (its default) and, beside it, with
  ``--jobs 1``.

FILES are the recordings of ``tests/fixtures/real/*/`` (every framework, clean and violating runs) in
OTLP/JSON: agentevals reads OTLP/JSON and Jaeger JSON but not OTLP protobuf, so the ``.otlp.pb``
twins are left out for both tools. With ``--copies N`` FILES are N copies of them, each copy's
trace ids rewritten, as ``benchmarks/offline.py`` writes them (5: 580 runs). agentevals grades a
trace against a golden case (its default metric, ``tool_trajectory_avg_score``), so the benchmark
writes an ADK eval set with the clean run's user message, tool calls and answer; otel-traj grades
with the example policy. How many traces each
tool actually graded is printed with the times.

Both tools run from their bytecode, as installed packages do (pip compiles a wheel's modules at
install): the benchmark compiles otel_traj's first, since an editable install run with
``PYTHONDONTWRITEBYTECODE`` set would otherwise compile every module from source on every start.

agentevals-cli is installed on first use into ``.bench-venvs/agentevals-cli-0.11.0`` (git-ignored;
delete it to reinstall); ``--no-agentevals`` skips it.

    python benchmarks/cli.py [--rounds R] [--copies N] [--no-agentevals] [--json]
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from offline import write_corpus

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
PYTHON = sys.executable
OTEL_TRAJ = str(Path(sys.executable).parent / "otel-traj")
AGENTEVALS = "agentevals-cli==0.11.0"
AGENTEVALS_VENV = ROOT / ".bench-venvs" / "agentevals-cli-0.11.0"
# The user message of every recorded run (tests/fixtures/real/README.md).
USER = "Customer C023 here. I was charged twice for invoice INV-1002, please refund the 199 yuan."
STARTUP_TARGET_MS = 150
_BUILD_POLICY_MODELS = "from otel_traj.policy import PolicyFile; PolicyFile.model_rebuild(force=True)"
SPEEDUP_TARGET = 10


def trace_files() -> list[str]:
    return [str(path) for path in sorted(REAL.glob("*/*.otlp.json"))]


def agentevals_command() -> str:
    """The ``agentevals`` entry point of the benchmark's own venv, created on first use."""
    exe = AGENTEVALS_VENV / "bin" / "agentevals"
    if not exe.exists():
        print(f"installing {AGENTEVALS} into {AGENTEVALS_VENV.relative_to(ROOT)} ...", file=sys.stderr)
        subprocess.run([PYTHON, "-m", "venv", "--clear", str(AGENTEVALS_VENV)], check=True)
        pip = [str(AGENTEVALS_VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, AGENTEVALS], check=True)
    return str(exe)


def write_eval_set(directory: Path) -> Path:
    """An ADK eval set whose one case is the clean run: what agentevals compares each trace with."""
    facts = json.loads((REAL / "openai_v2" / "clean.facts.json").read_text(encoding="utf-8"))
    invocation = {
        "invocation_id": "refund-1",
        "user_content": {"role": "user", "parts": [{"text": USER}]},
        "final_response": {"role": "model", "parts": [{"text": facts["final_answer"]}]},
        "intermediate_data": {
            "tool_uses": [{"name": call["name"], "args": call["arguments"]} for call in facts["tool_calls"]]
        },
    }
    eval_set = {"eval_set_id": "support", "eval_cases": [{"eval_id": "refund", "conversation": [invocation]}]}
    path = directory / "eval_set.json"
    path.write_text(json.dumps(eval_set), encoding="utf-8")
    return path


def wall_ms(command: Sequence[str], ok: tuple[int, ...]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(command)} exited {proc.returncode}:\n{proc.stderr.decode()}")
    return elapsed


def graded_by_otel_traj(files: list[str]) -> str:
    command = [OTEL_TRAJ, "grade", *files, "--policy", str(POLICY), "--format", "json"]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    trajectories = json.loads(proc.stdout)["trajectories"]
    return f"{len(trajectories)} trajectories graded"


def graded_by_agentevals(agentevals: str, files: list[str], eval_set: Path) -> str:
    command = [agentevals, "run", *files, "--eval-set", str(eval_set), "--output", "json"]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    traces = json.loads(proc.stdout)["traces"]
    scored = sum(any(m.get("score") is not None for m in t["metrics"]) for t in traces)
    return f"{scored} of {len(traces)} traces scored (others: no invocation extracted or no matching case)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--copies", type=int, default=0, help="grade N copies of the recordings (0: once)")
    parser.add_argument("--no-agentevals", action="store_true", help="skip the agentevals-cli comparison")
    parser.add_argument("--json", action="store_true", help="print the medians as one JSON object")
    args = parser.parse_args()

    compileall.compile_dir(ROOT / "otel_traj", quiet=1)
    with tempfile.TemporaryDirectory() as corpus:
        files = trace_files()
        if args.copies:
            write_corpus(Path(corpus), args.copies)
            files = sorted(str(path) for path in Path(corpus).iterdir())
        results, times, graded = _measure(args, files)
    medians = {name: statistics.median(values) for name, values in times.items()}
    if args.json:
        print(json.dumps(results))
        return

    floor = medians["python -c pass"]
    source = f"{args.copies} copies of the" if args.copies else "the"
    print(f"{args.rounds} rounds; {len(files)} files ({source} OTLP/JSON recordings) graded by both tools")
    print(f"{'command':<26} {'median ms':>9} {'min ms':>7} {'over python -c pass':>19}")
    for name, values in times.items():
        print(f"{name:<26} {medians[name]:>9.1f} {min(values):>7.1f} {medians[name] - floor:>19.1f}")
    for name, line in graded.items():
        print(f"{name}: {line}")
    for name in ("otel-traj --version", "otel-traj policy check"):
        verdict = "met" if medians[name] <= STARTUP_TARGET_MS else "NOT met"
        print(f"target ({name} <= {STARTUP_TARGET_MS} ms): {verdict}")
    print(f"otel-traj grade --jobs 1 / otel-traj grade: {results['one_job_over_jobs']}x")
    if "agentevals_over_otel_traj" in results:
        ratio = results["agentevals_over_otel_traj"]
        verdict = "met" if ratio >= SPEEDUP_TARGET else "NOT met"
        print(f"agentevals run / otel-traj grade: {ratio}x; target (>= {SPEEDUP_TARGET}x): {verdict}")


def _measure(
    args: argparse.Namespace, files: list[str]
) -> tuple[dict[str, Any], dict[str, list[float]], dict[str, str]]:
    """The results, each command's times over the rounds, and how many runs each tool graded."""
    # Exit 1 is ``grade``'s answer for the violating runs, and agentevals' for the failed scores.
    commands: dict[str, tuple[list[str], tuple[int, ...]]] = {
        "python -c pass": ([PYTHON, "-c", "pass"], (0,)),
        "import otel_traj": ([PYTHON, "-c", "import otel_traj"], (0,)),
        # The policy's pydantic models, built as a validation builds them: what every command that
        # reads a policy pays before it reads the file.
        "policy models": ([PYTHON, "-c", _BUILD_POLICY_MODELS], (0,)),
        "otel-traj --version": ([OTEL_TRAJ, "--version"], (0,)),
        "otel-traj policy check": ([OTEL_TRAJ, "policy", "check", str(POLICY)], (0,)),
        "otel-traj grade": ([OTEL_TRAJ, "grade", *files, "--policy", str(POLICY)], (0, 1)),
        "otel-traj grade --jobs 1": (
            [OTEL_TRAJ, "grade", *files, "--policy", str(POLICY), "--jobs", "1"],
            (0, 1),
        ),
    }
    with tempfile.TemporaryDirectory() as tmp:
        eval_set = write_eval_set(Path(tmp))
        agentevals = None if args.no_agentevals else agentevals_command()
        if agentevals is not None:
            commands["agentevals run"] = ([agentevals, "run", *files, "--eval-set", str(eval_set)], (0, 1))
        for command, ok in commands.values():  # warm the file cache and the bytecode caches
            wall_ms(command, ok)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, (command, ok) in commands.items():
                times[name].append(wall_ms(command, ok))
        graded = {"otel-traj grade": graded_by_otel_traj(files)}
        if agentevals is not None:
            graded["agentevals run"] = graded_by_agentevals(agentevals, files, eval_set)

    medians = {name: statistics.median(values) for name, values in times.items()}
    results: dict[str, Any] = {
        "rounds": args.rounds,
        "files": len(files),
        "median_ms": {name: round(ms, 1) for name, ms in medians.items()},
        "one_job_over_jobs": round(medians["otel-traj grade --jobs 1"] / medians["otel-traj grade"], 2),
    }
    if "agentevals run" in medians:
        ratio = medians["agentevals run"] / medians["otel-traj grade"]
        results["agentevals_over_otel_traj"] = round(ratio, 2)
    return results, times, graded


if __name__ == "__main__":
    main()
