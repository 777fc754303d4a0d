"""Token usage attributes of every dialect, read into one shape.

Key order matters: the first present key wins, so a span that carries both a new and an old name
(or both ``gen_ai.usage.*`` and a dialect's own count) is counted once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from otel_traj.dialects._base import first_int, loads


class Usage(NamedTuple):
    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None


NO_USAGE = Usage()

INPUT_KEYS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "ai.usage.inputTokens",
    "ai.usage.promptTokens",
)
OUTPUT_KEYS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "ai.usage.outputTokens",
    "ai.usage.completionTokens",
)
CACHE_READ_KEYS = (
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens",
    "llm.token_count.prompt_details.cache_read",
    "ai.usage.cachedInputTokens",
)
CACHE_WRITE_KEYS = (
    "gen_ai.usage.cache_write.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
    "gen_ai.usage.cache_write_input_tokens",
    "llm.token_count.prompt_details.cache_write",
)
REASONING_KEYS = (
    "gen_ai.usage.reasoning.output_tokens",
    "gen_ai.usage.reasoning_tokens",
    "llm.token_count.completion_details.reasoning",
    "ai.usage.reasoningTokens",
)
AGGREGATED_INPUT_KEYS = ("gen_ai.aggregated_usage.input_tokens",)
AGGREGATED_OUTPUT_KEYS = ("gen_ai.aggregated_usage.output_tokens",)


def usage(attrs: Mapping[str, Any]) -> Usage:
    return Usage(
        input=first_int(attrs, INPUT_KEYS),
        output=first_int(attrs, OUTPUT_KEYS),
        cache_read=first_int(attrs, CACHE_READ_KEYS),
        cache_write=first_int(attrs, CACHE_WRITE_KEYS),
        reasoning=first_int(attrs, REASONING_KEYS),
    )


def agent_usage(attrs: Mapping[str, Any]) -> Usage:
    """Usage on an agent span: pydantic-ai's aggregated counts first, else the plain names."""
    aggregated_in = first_int(attrs, AGGREGATED_INPUT_KEYS)
    aggregated_out = first_int(attrs, AGGREGATED_OUTPUT_KEYS)
    if aggregated_in is not None or aggregated_out is not None:
        return Usage(input=aggregated_in, output=aggregated_out)
    return usage(attrs)


def usage_from_json(value: Any) -> Usage:
    """A JSON usage object: Langfuse ``usage_details``, OpenAI/Logfire ``usage``, Gemini metadata."""
    data = loads(value, 65536) if isinstance(value, str) else value
    if not isinstance(data, Mapping):
        return NO_USAGE
    cache_read = first_int(
        data, ("cache_read_input_tokens", "input_cached_tokens", "cached_content_token_count")
    )
    details = data.get("input_tokens_details") or data.get("prompt_tokens_details")
    if cache_read is None and isinstance(details, Mapping):
        cache_read = first_int(details, ("cached_tokens",))
    reasoning = first_int(data, ("output_reasoning_tokens", "reasoning_tokens", "thoughts_token_count"))
    details = data.get("output_tokens_details") or data.get("completion_tokens_details")
    if reasoning is None and isinstance(details, Mapping):
        reasoning = first_int(details, ("reasoning_tokens",))
    return Usage(
        input=first_int(
            data, ("input", "input_tokens", "prompt_tokens", "promptTokens", "prompt_token_count")
        ),
        output=first_int(
            data,
            ("output", "output_tokens", "completion_tokens", "completionTokens", "candidates_token_count"),
        ),
        cache_read=cache_read,
        cache_write=first_int(
            data, ("cache_creation_input_tokens", "cache_write_input_tokens", "input_cache_creation")
        ),
        reasoning=reasoning,
    )
