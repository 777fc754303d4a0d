"""A closed pipe (``otel-traj grade ... | head``) ends the command quietly, without a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_closed_stdout_exits_quietly() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_traj.cli", "grade", "tests/fixtures/real", "--format", "json"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the command writes anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err
