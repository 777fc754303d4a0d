"""The processor attached to real frameworks in the same run gives exactly the trajectory the
offline path rebuilds from the spans those frameworks exported."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = {
    "examples.pydantic_ai_agent": "pydantic_ai",
    "examples.openai_agents_openinference": "openinference.instrumentation.openai_agents",
    "examples.langgraph_openinference": "openinference.instrumentation.langchain",
}
PATH = ["get_subscription", "list_invoices", "list_invoices", "create_refund_request"]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.parametrize("example", list(FRAMEWORKS))
def test_in_process_equals_offline(example: str) -> None:
    if not _installed(FRAMEWORKS[example]):
        pytest.skip(f"needs the examples extra: {FRAMEWORKS[example]} not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "OPENAI_", "OTEL_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.inprocess_run", example],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    [in_process] = result["in_process"]
    [offline] = result["offline"]
    assert [c["name"] for c in in_process["tool_calls"]] == PATH
    assert in_process["model_turns"] == 4
    assert in_process["input_tokens"] > 0
    assert in_process == offline
