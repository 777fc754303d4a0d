"""Fixtures shared by the test modules."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import tests.properties  # noqa: F401  (loads the suite's Hypothesis profile before any test module)
from tests.postgres_server import PostgresServer
from tests.serve_helpers import Served

# Threads that a pipeline, its sinks or the service start, and join when they are shut down.
# (The gRPC receiver's call threads are numbered: ``otel-traj-grpc_0``...)
OWN_THREADS = (
    "otel-traj-worker",
    "otel-traj-sqlite",
    "otel-traj-store",
    "otel-traj-langfuse",
    "otel-traj-otel-events",
    "otel-traj-judge",
    "otel-traj-http",
    "otel-traj-grpc",
)


@pytest.fixture(autouse=True)
def nothing_left_running() -> Iterator[None]:
    """Fails a test that leaves a pipeline, sink or service of its own running (one made by a fixture
    of a wider scope was there before the test, and is that fixture's to shut down)."""
    before = set(threading.enumerate())
    yield
    left = [t for t in threading.enumerate() if t not in before and t.name.startswith(OWN_THREADS)]
    for thread in left:
        # A shutdown joins these threads before it returns; this only covers one still returning.
        thread.join(timeout=1.0)
    alive = sorted(t.name for t in left if t.is_alive())
    assert not alive, f"still running after the test: {alive} (shut down what the test starts)"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL cluster for the session (skips where the server is not installed)."""
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.remove()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A new, empty database of the session's cluster."""
    return postgres_server.database()


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
