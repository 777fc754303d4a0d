"""Fixtures shared by the test modules."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.serve_helpers import Served


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """Starts ``otel-traj serve`` processes (``served(*flags)``); kills any still running at the end."""
    started: list[Served] = []

    def start(*args: str, store: Path | None = None) -> Served:
        server = Served(tmp_path, *args, store=store)
        started.append(server)
        return server

    yield start
    for server in started:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
