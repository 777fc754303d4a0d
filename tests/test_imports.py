"""gRPC, uvicorn and Langfuse load only in what uses them: ``import otel_traj``, the CLI's parser and
every command but ``serve`` (and ``grade --langfuse``) run without them. ``import otel_traj`` and
``otel-traj --version`` load neither pydantic nor the OpenTelemetry SDK, protobuf or the grader;
``otel-traj policy check`` loads pydantic and the policy models but none of the rest.

Each case runs in a fresh interpreter, since this test process has long since imported them all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from otel_traj.sinks.store import connect

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "real" / "langgraph_openinference" / "clean.otlp.json"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
# The project's modules that bring them are named too: the Langfuse sink speaks to Langfuse over
# httpx without the ``langfuse`` package, so a plain ``grade`` that loaded it would show no ``langfuse``.
# prometheus_client too: an application that grades without a Prometheus sink never needs it.
HEAVY = (
    "grpc",
    "uvicorn",
    "langfuse",
    "httpx",
    "prometheus_client",
    "otel_traj.sinks.langfuse",
    "otel_traj.serve.service",
)

# What a command that neither grades nor reads trace files has no use for: the grader (and the
# cases, which bring it), the OpenTelemetry SDK and protobuf (the trace readers), and the modules of
# the CLI's other commands.
GRADING = (
    "opentelemetry.sdk",
    "google.protobuf",
    "otel_traj.grader",
    "otel_traj.cases",
    "otel_traj.adapters",
    "otel_traj.cli.grade",
    "otel_traj.cli.serve",
    "otel_traj.cli.report",
)
# What a command that reads no policy has no use for.
POLICY_PARTS = ("pydantic", "yaml", "otel_traj.policy")

# Runs ``code``, then prints, as its last line, those of ``names`` the interpreter has loaded.
PROBE = """
import contextlib, io, json, sys
out = io.StringIO()
with contextlib.redirect_stdout(out):
{code}
print(json.dumps([name for name in {names!r} if name in sys.modules]))
"""


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter: nothing this test process imported is loaded there."""
    proc = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def loaded_after(code: str, names: tuple[str, ...] = HEAVY) -> list[str]:
    body = "\n".join(f"    {line}" for line in code.strip().splitlines())
    proc = _python("-c", PROBE.format(code=body, names=names))
    loaded: list[str] = json.loads(proc.stdout.splitlines()[-1])
    return loaded


@pytest.mark.parametrize(
    "code",
    [
        "import otel_traj",
        "from otel_traj import *",
        "import otel_traj.serve, otel_traj.sinks, otel_traj.reports",
        "from otel_traj.serve import Accepted, Ingest, InvalidRequest, Refused, ServeSettings",
        "import otel_traj.cli\notel_traj.cli.build_parser()",
    ],
)
def test_importing_loads_no_heavy_part(code: str) -> None:
    assert loaded_after(code) == []


def test_the_processor_loads_the_logs_sdk_only_for_its_log_record_processor() -> None:
    logs = ("opentelemetry.sdk._logs",)
    made = "from otel_traj import TrajectoryProcessor\nprocessor = TrajectoryProcessor()"
    assert loaded_after(made, logs) == []
    assert loaded_after(made + "\nprocessor.log_record_processor", logs) == list(logs)


def test_grade_without_langfuse_loads_no_heavy_part() -> None:
    code = f"""
from otel_traj.cli import main
assert main(["grade", {str(FIXTURE)!r}, "--policy", {str(POLICY)!r}, "--format", "json"]) == 0
assert json.loads(out.getvalue())["trajectories"], out.getvalue()
"""
    assert loaded_after(code) == []


def test_report_loads_no_heavy_part(tmp_path: Path) -> None:
    store = tmp_path / "verdicts.db"
    connect(store).close()
    code = f"""
from otel_traj.cli import main
assert main(["report", "--store", {str(store)!r}, "--format", "json"]) == 0
"""
    assert loaded_after(code) == []


def test_serve_help_loads_no_heavy_part() -> None:
    code = """
from otel_traj.cli import main
try:
    main(["serve", "--help"])
except SystemExit as exc:
    assert exc.code == 0
assert "--grpc-port" in out.getvalue()
"""
    assert loaded_after(code) == []


def test_serve_help_works_from_the_command_line() -> None:
    proc = _python("-m", "otel_traj.cli", "serve", "--help")
    assert "--grpc-port" in proc.stdout and "--tls-client-ca" in proc.stdout


def test_the_service_still_loads_on_first_use() -> None:
    code = """
from otel_traj.serve import Ports, Service
import otel_traj.serve.service as service
assert (Ports, Service) == (service.Ports, service.Service)
"""
    assert {"grpc", "uvicorn"} <= set(loaded_after(code))


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import otel_traj.serve

    with pytest.raises(AttributeError, match="no_such_name"):
        otel_traj.serve.no_such_name  # noqa: B018


@pytest.mark.parametrize("code", ["import otel_traj", "import otel_traj.cli"])
def test_importing_the_package_loads_neither_pydantic_nor_the_grader(code: str) -> None:
    assert loaded_after(code, HEAVY + GRADING + POLICY_PARTS) == []


def test_version_loads_no_command() -> None:
    code = """
from otel_traj.cli import main
try:
    main(["--version"])
except SystemExit as exc:
    assert exc.code == 0
assert out.getvalue().startswith("otel-traj "), out.getvalue()
"""
    assert loaded_after(code, HEAVY + GRADING + POLICY_PARTS) == []


def test_policy_check_loads_only_the_policy() -> None:
    code = f"""
from otel_traj.cli import main
assert main(["policy", "check", {str(POLICY)!r}]) == 0
assert "valid policy" in out.getvalue(), out.getvalue()
"""
    assert loaded_after(code, HEAVY + GRADING + POLICY_PARTS) == list(POLICY_PARTS)


def test_every_public_name_resolves_on_first_use() -> None:
    code = """
import importlib
import otel_traj
for name in otel_traj.__all__:
    module = importlib.import_module(otel_traj._LAZY[name])
    assert getattr(otel_traj, name) is getattr(module, name), name
assert set(otel_traj.__all__) <= set(dir(otel_traj))
"""
    assert "otel_traj.grader" in loaded_after(code, GRADING)


def test_an_unknown_name_of_the_package_is_an_attribute_error() -> None:
    import otel_traj

    with pytest.raises(AttributeError, match="no_such_name"):
        otel_traj.no_such_name  # noqa: B018


def test_help_lists_every_command_without_loading_it() -> None:
    """The help lines in ``COMMANDS`` are the ones each command's ``register`` gives."""
    from otel_traj.cli import build_parser

    assert build_parser(load=()).format_help() == build_parser().format_help()
