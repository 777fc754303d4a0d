"""``otel-traj serve`` against what a hostile or careless neighbour does: a second service started on
a taken port, a token read from the process list, connections opened and left idle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.serve_helpers import ROOT, Served, cli_env


def serve_exit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``otel-traj serve`` expected to stop at startup: its exit code and stderr, bounded in time."""
    return subprocess.run(
        [sys.executable, "-m", "otel_traj.cli", "serve", "--store", "", *args],
        cwd=ROOT,
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def served(tmp_path: Path) -> Served:
    service = Served(tmp_path)
    yield service
    assert service.stop() == 0


@pytest.mark.parametrize("flag", ["--grpc-port", "--http-port", "--metrics-port"])
def test_a_second_service_on_a_taken_port_fails_naming_the_flag_and_the_port(
    served: Served, flag: str
) -> None:
    taken = {
        "--grpc-port": served.grpc_port,
        "--http-port": served.http_port,
        "--metrics-port": served.metrics_port,
    }[flag]
    ports = {"--grpc-port": "0", "--http-port": "0", "--metrics-port": "0", flag: str(taken)}
    second = serve_exit(*(item for pair in ports.items() for item in pair))
    assert second.returncode == 2, second.stderr
    assert f"otel-traj serve: {flag} {taken}: address in use" in second.stderr
    assert "Errno" not in second.stderr
    assert "listening" not in second.stdout
