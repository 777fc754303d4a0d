"""``otel-traj serve`` logs: each line once, though two uvicorn servers share the process."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from tests.serve_helpers import Served

TIME = re.compile(r"^\S+ \S+ ")  # the asctime prefix of the text format


def test_each_log_line_is_printed_once(served: Callable[..., Served]) -> None:
    server = served()
    assert server.stop() == 0
    lines = [TIME.sub("", line) for line in server.log.read_text().splitlines() if line.strip()]
    assert [line for line in lines if "Started server process" in line] == [
        f"INFO uvicorn.error: Started server process [{server.proc.pid}]"
    ]
    assert any("Shutting down" in line for line in lines), lines
    repeated = [line for line, n in Counter(lines).items() if n > 1]
    assert repeated == [], lines
