"""Every framework example runs offline (``python -m examples.<name>``) and prints the same verdict:
the scripted run lists another customer's invoices, so the trajectory is ``unsafe`` by ``scope``.

Frameworks are optional (the ``examples`` extra); an example whose framework is not installed is
skipped with the package it needs.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from examples._scenario import EXPECTED_PATH

ROOT = Path(__file__).resolve().parent.parent

# example module -> the packages it imports
EXAMPLES = {
    "plain_otel": (),
    "pydantic_ai_agent": ("pydantic_ai",),
    "openai_agents_openinference": ("agents", "openinference.instrumentation.openai_agents"),
    "langgraph_openinference": ("langgraph", "langchain_openai", "openinference.instrumentation.langchain"),
    "strands_agent": ("strands",),
}


def _missing(modules: tuple[str, ...]) -> list[str]:
    missing = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


@pytest.mark.parametrize("example", list(EXAMPLES))
def test_example_prints_its_verdict(example: str) -> None:
    missing = _missing(EXAMPLES[example])
    if missing:
        pytest.skip(f"needs the examples extra: {', '.join(missing)} not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "OPENAI_", "OTEL_"))}
    proc = subprocess.run(
        [sys.executable, "-m", f"examples.{example}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["TRACE", "AGENT", "OUTCOME"], proc.stdout
    [row] = [line for line in lines[1:] if len(line.split()[0]) == 32]
    assert row.split()[1:3] == ["support_agent", "unsafe"], proc.stdout
    assert f"    {EXPECTED_PATH}" in lines, proc.stdout
    failed = [
        line.strip() for line in lines if line.startswith("    critical ") or line.startswith("    error ")
    ]
    assert len(failed) == 1 and failed[0].startswith(
        "critical scope: list_invoices used customer_id=C013, subject is C023"
    ), proc.stdout
    assert lines[-1] == "1 trajectory: 1 unsafe"
