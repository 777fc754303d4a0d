"""The core names no framework: what an instrumentation records, and how, is a dialect's to say
(``otel_traj/dialects/``, one module each; file formats in ``otel_traj/adapters/``). A module
elsewhere that names a framework holds knowledge a new dialect would have to find and change."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "otel_traj"
READING = ("dialects", "adapters")
# Frameworks and instrumentations the dialects read. Langfuse is also a backend otel-traj delivers
# to (its sinks name it), and provider names (OpenAI, Anthropic, Bedrock, Gemini) price model calls.
FRAMEWORKS = re.compile(
    r"openinference|traceloop|openllmetry|langchain|langgraph|llama[-_ ]?index|\bdspy\b|crewai|smolagents"
    r"|haystack|agentops|mlflow|genkit|langsmith|logfire|vercel|strands|autogen|\bagno\b|beeai|mastra"
    r"|semantic[-_ ]kernel|litellm|openlit|any[-_]agent|pydantic[-_ ]ai\b|\badk\b|\breact\b",
    re.IGNORECASE,
)


def test_no_module_outside_the_reading_layer_names_a_framework() -> None:
    named = [
        f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in READING
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FRAMEWORKS.search(line)
    ]
    assert not named, "\n".join(named)


def test_the_pattern_finds_what_it_looks_for() -> None:
    assert FRAMEWORKS.search("from otel_traj.dialects import dspy")
    assert FRAMEWORKS.search("# LlamaIndex's ToolOutput")
    assert not FRAMEWORKS.search("def contains_token(text: str, needle: str) -> bool:")
