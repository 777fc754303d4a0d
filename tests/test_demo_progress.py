"""The progress bar draws on a real terminal (a pseudo-terminal here) and stays silent when piped."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from otel_traj.progress import Progress, track

ROOT = Path(__file__).resolve().parent.parent


def _read_all(fd: int) -> str:
    chunks = []
    while select.select([fd], [], [], 0)[0]:
        data = os.read(fd, 65536)
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode()


def test_draws_on_a_terminal_and_erases_itself() -> None:
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as terminal:
        assert terminal.isatty()
        assert list(track(range(3), "grading", stream=terminal)) == [0, 1, 2]
        terminal.flush()
        out = _read_all(master)
    os.close(master)
    frames = out.split("\r")
    assert frames[1].startswith("grading [") and frames[1].endswith("1/3  33%")
    assert any(f.endswith("3/3 100%") and "-" not in f.split("]")[0] for f in frames)
    # The last frame blanks the line, so what is printed next starts clean.
    assert frames[-2].strip() == "" and frames[-1] == ""


def test_redraws_are_throttled_but_the_last_frame_is_drawn() -> None:
    stream = io.StringIO()
    with Progress(1000, "files", stream=stream, enabled=True, min_interval_s=3600) as progress:
        for _ in range(1000):
            progress.advance()
    frames = [f for f in stream.getvalue().split("\r") if f.strip()]
    assert len(frames) == 2  # the first update and the completed bar
    assert frames[-1].endswith("1000/1000 100%")


def test_unknown_length_counts() -> None:
    stream = io.StringIO()
    progress = Progress(0, "spans", stream=stream, enabled=True, min_interval_s=0)
    progress.advance(5)
    assert stream.getvalue().endswith("\rspans 5")


def test_silent_when_not_a_terminal() -> None:
    stream = io.StringIO()
    assert list(track(["a", "b"], "grading", stream=stream)) == ["a", "b"]
    assert stream.getvalue() == ""


def test_silent_in_a_pipe_from_a_real_process() -> None:
    code = "from otel_traj.progress import track\nfor _ in track(range(50), 'grading'):\n    pass\n"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout == ""
