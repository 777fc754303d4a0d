"""The processor attached to real frameworks in the same run gives exactly the trajectory the
offline path rebuilds from the spans those frameworks exported."""

from __future__ import annotations

import json

import pytest

from tests.example_runs import missing_modules, run_module
from tests.installed import not_installed

FRAMEWORKS = {
    "examples.pydantic_ai_agent": "pydantic_ai",
    "examples.openai_agents_openinference": "openinference.instrumentation.openai_agents",
    "examples.langgraph_openinference": "openinference.instrumentation.langchain",
}
# The first turn requests two calls at once; frameworks may start them in either order.
FIRST_TURN = {"get_subscription", "list_invoices"}
THEN = ["list_invoices", "create_refund_request"]


@pytest.mark.parametrize("example", list(FRAMEWORKS))
def test_in_process_equals_offline(example: str) -> None:
    if missing_modules([FRAMEWORKS[example]]):
        not_installed(FRAMEWORKS[example], "the examples extra: make test")
    proc = run_module("tests.inprocess_run", example)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    [in_process] = result["in_process"]
    [offline] = result["offline"]
    names = [c["name"] for c in in_process["tool_calls"]]
    assert set(names[:2]) == FIRST_TURN and names[2:] == THEN, names
    assert in_process["model_turns"] == 4
    assert in_process["input_tokens"] > 0
    assert in_process == offline
