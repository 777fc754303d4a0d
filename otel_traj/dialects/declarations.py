"""What dialects declare for the core beyond reading one span, gathered in one place.

The builder, the assembler's configuration, versions and the checks read these and name no framework:
trace-level keys to capture, the conversation keys, the prompt-version keys, the tools frameworks
define to return structured output, the scaffolds around a model's answer, the wrappers around a
tool's returned value, and what spans record in their span events only (which a backend that keeps
no events loses). A new dialect adds its own here, beside its module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from otel_traj.dialects import (
    adk,
    dspy,
    langfuse,
    llamaindex,
    logfire,
    openinference,
    pydantic_ai,
    react,
    semconv,
    traceloop,
)

# The conventions' conversation keys, then the vendors' (first found wins).
CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id", langfuse.SESSION, logfire.GROUP_ID)
# Trace-level keys vendors write beside the conventions' (captured from any span of a run).
CAPTURE_KEYS = (langfuse.SESSION, langfuse.USER, logfire.GROUP_ID)
# (name key, version key) of a run's prompt, per instrumentation, first found wins.
PROMPT_KEYS: tuple[tuple[str | None, str], ...] = (
    *langfuse.PROMPT_KEYS,
    *traceloop.PROMPT_KEYS,
    *openinference.PROMPT_KEYS,
)
OUTPUT_TOOLS = frozenset({*pydantic_ai.OUTPUT_TOOLS, *openinference.OUTPUT_TOOLS})
OUTPUT_TOOL_PREFIXES = pydantic_ai.OUTPUT_TOOL_PREFIXES
# A model's text with a framework's scaffold around the answer (DSPy's sections, ReAct's Thought /
# Answer) gives the answer; any other text is unchanged by each.
ANSWER_SCAFFOLDS: tuple[Callable[[str], str], ...] = (dspy.answer, react.answer)
# What a span (its name and attributes) records in its span events only, said for a reader, else
# None: a source that keeps no span events (Langfuse) loses it.
IN_EVENTS: tuple[Callable[[str, Mapping[str, Any]], str | None], ...] = (
    llamaindex.model_calls_in_events,
    semconv.strands_messages_in_events,
)
# A tool's returned value inside a framework's wrapper, as JSON data.
RESULT_WRAPPERS: tuple[Callable[[Any], Any], ...] = (llamaindex.returned_value, adk.returned_value)


def is_output_tool(name: str) -> bool:
    """A tool a framework defines to return the answer, not an action of the agent."""
    return name in OUTPUT_TOOLS or name.startswith(OUTPUT_TOOL_PREFIXES)


def answer_in(text: str) -> str:
    """The answer inside a model's text, without a framework's scaffold."""
    for unwrap in ANSWER_SCAFFOLDS:
        text = unwrap(text)
    return text


def returned_value(value: Any) -> Any:
    """A tool's returned value without a framework's wrapper."""
    for unwrap in RESULT_WRAPPERS:
        unwrapped = unwrap(value)
        if unwrapped is not value:
            return unwrapped
    return value


def recorded_in_events(name: str, attributes: Mapping[str, Any]) -> str | None:
    """What the span records in its span events only (see ``IN_EVENTS``), else None."""
    return next((what for read in IN_EVENTS if (what := read(name, attributes)) is not None), None)
