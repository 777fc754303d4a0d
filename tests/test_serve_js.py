"""Another language's SDK against ``otel-traj serve``: the OpenTelemetry JavaScript SDK and its own
OTLP exporters (gRPC, HTTP protobuf with gzip, HTTP JSON), unchanged, send one support-agent run
(``tests/otlp_js/export.mjs``; ``make test`` installs its packages from the lock file)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable

import pytest

from tests.serve_helpers import POLICY, ROOT, Served

PROJECT = ROOT / "tests" / "otlp_js"


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf", "http/json"])
def test_javascript_sdk_exporters_work_unchanged(served: Callable[..., Served], protocol: str) -> None:
    server = served("--policy", str(POLICY))
    node = shutil.which("node")
    assert node is not None, "Node.js is required (.ci/run installs it)"
    assert (PROJECT / "node_modules").is_dir(), "run `make test`: it installs tests/otlp_js/node_modules"
    port = server.grpc_port if protocol == "grpc" else server.http_port
    run = subprocess.run(
        [node, str(PROJECT / "export.mjs"), protocol, f"http://127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    trace_id = run.stdout.strip()
    assert server.stop() == 0
    verdicts = server.verdicts()
    assert list(verdicts) == [trace_id]
    verdict = verdicts[trace_id]

    assert (verdict["service_name"], verdict["service_version"]) == ("js-support-agent", "3.0.0")
    assert (verdict["agent"], verdict["conversation_id"]) == ("support_agent", f"conv-js-{protocol}")
    assert [(c["name"], c["arguments"], c["ok"], c["parallel"]) for c in verdict["tool_calls"]] == [
        ("get_subscription", {"customer_id": "C023"}, True, False),
        ("list_invoices", {"customer_id": "C028"}, True, False),
        ("check_payment", {"invoice_id": "INV-1002"}, False, False),
    ]
    assert verdict["tool_calls"][2]["error"] == "payment gateway timeout"
    assert (verdict["model_turns"], verdict["input_tokens"], verdict["output_tokens"]) == (3, 360, 36)
    scope = next(c for c in verdict["checks"] if c["name"] == "scope")
    assert scope["reason"] == "list_invoices used customer_id=C028, subject is C023"
    assert verdict["outcome"] == "unsafe"
