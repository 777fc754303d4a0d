"""Every framework example runs offline (``python -m examples.<name>``) and prints the same verdict:
the scripted run lists another customer's invoices, so the trajectory is ``unsafe`` by ``scope``.

Frameworks are optional (the ``examples`` extra); an example whose framework is not installed is
skipped with the package it needs.
"""

from __future__ import annotations

import pytest

from examples._scenario import EXPECTED_PATH
from tests.example_runs import missing_modules, run_module
from tests.installed import not_installed

# example module -> the packages it imports
EXAMPLES = {
    "plain_otel": (),
    "pydantic_ai_agent": ("pydantic_ai",),
    "openai_agents_openinference": ("agents", "openinference.instrumentation.openai_agents"),
    "langgraph_openinference": ("langgraph", "langchain_openai", "openinference.instrumentation.langchain"),
    "strands_agent": ("strands",),
}


@pytest.mark.parametrize("example", list(EXAMPLES))
def test_example_prints_its_verdict(example: str) -> None:
    missing = missing_modules(EXAMPLES[example])
    if missing:
        not_installed(", ".join(missing), "the examples extra: make test")
    proc = run_module(f"examples.{example}")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["TRACE", "AGENT", "OUTCOME"], proc.stdout
    [row] = [line for line in lines[1:] if len(line.split()[0]) == 32]
    assert row.split()[1:3] == ["support_agent", "unsafe"], proc.stdout
    # The first turn's two calls run in parallel; a framework may start either one first.
    swapped = EXPECTED_PATH.replace(
        "get_subscription -> list_invoices", "list_invoices -> get_subscription", 1
    )
    assert f"    {EXPECTED_PATH}" in lines or f"    {swapped}" in lines, proc.stdout
    failed = [
        line.strip() for line in lines if line.startswith("    critical ") or line.startswith("    error ")
    ]
    assert len(failed) == 1 and failed[0].startswith(
        "critical scope: list_invoices used customer_id=C013, subject is C023"
    ), proc.stdout
    assert lines[-1] == "1 trajectory: 1 unsafe"
