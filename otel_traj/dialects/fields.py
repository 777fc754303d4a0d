"""The evidence table: for each field of a step, every source a span may record it in, in precedence.

A span is classified once (tool, model or agent; see ``otel_traj.dialects``), then each field is read
from the first of its sources that yields a value, whichever dialect classified the span: a span with
two dialects' keys loses nothing. Dedicated keys come first (the GenAI semantic conventions, then each
vendor's own), generic input/output keys after them, span events and span names last.
``docs/dialects.md`` reproduces this table (``tests/test_docs.py`` keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import (
    adk,
    agentops,
    any_agent,
    claude_code,
    dspy,
    genkit,
    haystack,
    langfuse,
    langsmith,
    llamaindex,
    logfire,
    mastra,
    mlflow,
    openinference,
    pydantic_ai,
    semconv,
    traceloop,
    vercel,
)
from otel_traj.dialects._base import json_string, str_tuple
from otel_traj.dialects.sources import (
    Source,
    attribute,
    attributes,
    equals,
    event_attribute,
    has,
    span_name_after,
    specified,
    text_only,
)
from otel_traj.dialects.vocabulary import Vocabulary
from otel_traj.spanview import SpanView
from otel_traj.steps import StepKind

_TRACELOOP_TOOL = equals(traceloop.KIND, "tool")
_TRACELOOP_ENTITY = equals(traceloop.KIND, "agent", "workflow")
_LANGSMITH_FAILURES = f"`{langsmith.INPUTS}` (LangSmith: ToolMessage `status: error`)"
_LLAMAINDEX_MESSAGES = (
    f"events `{llamaindex.CHAT_END}` / `{llamaindex.CHAT_START}` → `messages` (LlamaIndex's own integration)"
)
# Span names that say what the span is, not which tool or agent it ran.
GENERIC_NAMES = frozenset({"running tool", "execute_tool", "agent run", "invoke_agent", "call_llm", "chat"})


def _own_span_name(vocabularies: tuple[Vocabulary, ...], kind: StepKind, dropped: str, label: str) -> Source:
    """The span name, on spans of dialects that name them after the tool or agent (a vocabulary says
    the span is one), without the suffix ``dropped`` (Traceloop's ``.tool``, smolagents' ``.run``)."""

    def read(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
        name = view.name
        if not isinstance(name, str) or name in GENERIC_NAMES:
            return None
        if not any(v.key in attrs and v.meaning(view, attrs) == kind for v in vocabularies):
            return None
        return name.removesuffix(dropped)

    return Source(label, read)


TOOL_NAME: tuple[Source, ...] = (
    attribute("gen_ai.tool.name"),
    attribute("tool.name", note="OpenInference"),
    attribute("ai.toolCall.name", note="Vercel AI SDK"),
    attribute("tool_name", note="pydantic-ai 1.x, Claude Code"),
    attribute("traceloop.entity.name", when=_TRACELOOP_TOOL, note="Traceloop tool spans"),
    attribute("name", when=logfire.is_tool, note="Logfire `Function: {name}` spans"),
    span_name_after("execute_tool "),
    _own_span_name(
        (langfuse.VOCABULARY, traceloop.VOCABULARY, mlflow.VOCABULARY),
        "tool",
        ".tool",
        "span name (Langfuse, Traceloop without its `.tool` suffix, MLflow)",
    ),
    Source(f"span name `<tool>{dspy.CALL_SUFFIX}` (DSPy)", dspy.tool_name, trigger=openinference.KIND),
    attribute(haystack.TOOL_NAME, note="Haystack"),
    attribute(genkit.NAME, when=genkit.is_tool, note="Genkit tool actions"),
    Source(
        f"`{llamaindex.INPUT_SUMMARY}` → `ToolCall(tool_name=…)` (LlamaIndex's own integration)",
        llamaindex.summary_tool_name,
        trigger=llamaindex.INPUT_SUMMARY,
    ),
    attribute(agentops.NAME, when=agentops.is_tool, note="AgentOps tool spans"),
)
TOOL_CALL_ID: tuple[Source, ...] = (
    attribute("gen_ai.tool.call.id", specified),
    attribute("tool_call.id", note="OpenInference"),
    attribute("ai.toolCall.id", note="Vercel AI SDK"),
    attribute("tool.id", note="OpenInference"),
    attribute(
        "langfuse.observation.metadata.tool_call_id",
        json_string,
        note="Langfuse's LangChain integration",
    ),
    Source(
        f"`{llamaindex.INPUT_SUMMARY}` → `ToolCall(tool_id=…)` (LlamaIndex's own integration)",
        llamaindex.summary_call_id,
        trigger=llamaindex.INPUT_SUMMARY,
    ),
    attribute(agentops.CALL_ID, note="AgentOps' `tool_call.<name>` request spans"),
)
TOOL_ARGUMENTS: tuple[Source, ...] = (
    attribute("gen_ai.tool.call.arguments"),
    attribute(any_agent.TOOL_ARGS, note="any-agent"),
    attribute("tool_arguments", note="pydantic-ai 1.x"),
    attribute("ai.toolCall.args", note="Vercel AI SDK"),
    attribute("ai.toolCall.input", note="Vercel AI SDK 5+"),
    attribute(adk.TOOL_ARGS, specified, note="Google ADK"),
    attribute(traceloop.ENTITY_INPUT, note="Traceloop"),
    Source(
        "`input.value` `args` named by `tool.parameters` (OpenInference: smolagents)",
        openinference.positional_arguments,
        trigger="tool.parameters",
    ),
    attribute("input.value", note="OpenInference"),
    attribute(langfuse.INPUT, json_string, note="Langfuse"),
    Source(f"`{langsmith.INPUTS}` (LangSmith tool runs)", langsmith.tool_arguments, trigger=langsmith.INPUTS),
    attribute("input", when=logfire.is_tool, note="Logfire"),
    attribute(mlflow.INPUTS, note="MLflow"),
    attribute("tool.parameters", openinference.parameters_arguments, note="OpenInference, when not a schema"),
    attribute(haystack.TOOL_INPUT, note="Haystack"),
    attribute(llamaindex.TOOL_ARGUMENTS, note="LlamaIndex under OpenLLMetry"),
    attribute(genkit.INPUT, when=genkit.is_tool, note="Genkit tool actions"),
    Source(
        f"`{llamaindex.INPUT_SUMMARY}` → `ToolCall(tool_kwargs=…)` (LlamaIndex's own integration)",
        llamaindex.summary_arguments,
        trigger=llamaindex.INPUT_SUMMARY,
    ),
    Source("`agentops.tool.input` (AgentOps)", agentops.tool_arguments, trigger=agentops.KIND),
    event_attribute("gen_ai.tool.message", "content"),
)
TOOL_RESULT: tuple[Source, ...] = (
    attribute("gen_ai.tool.call.result"),
    attribute(any_agent.OUTPUT, note="any-agent"),
    attribute("tool_response", note="pydantic-ai 1.x"),
    attribute("ai.toolCall.result", note="Vercel AI SDK"),
    attribute("ai.toolCall.output", note="Vercel AI SDK 5+"),
    attribute(adk.TOOL_RESPONSE, specified, note="Google ADK"),
    attribute(traceloop.ENTITY_OUTPUT, note="Traceloop"),
    attribute("output.value", note="OpenInference"),
    attribute(langfuse.OUTPUT, json_string, note="Langfuse"),
    Source(f"`{langsmith.OUTPUTS}` (LangSmith tool runs)", langsmith.tool_result, trigger=langsmith.OUTPUTS),
    attribute("output", when=logfire.is_tool, note="Logfire"),
    attribute(mlflow.OUTPUTS, json_string, note="MLflow"),
    attribute(haystack.TOOL_OUTPUT, note="Haystack"),
    attribute(genkit.OUTPUT, when=genkit.is_tool, note="Genkit tool actions"),
    Source("`agentops.tool.output` (AgentOps)", agentops.tool_result, trigger=agentops.KIND),
    event_attribute("gen_ai.choice", "message"),
    event_attribute(claude_code.OUTPUT_EVENT, claude_code.OUTPUT),
)

MODEL_NAME: tuple[Source, ...] = (
    *attributes(("gen_ai.response.model", "gen_ai.request.model")),
    attribute("llm.model_name", note="OpenInference"),
    attribute("ai.response.model", note="Vercel AI SDK"),
    attribute("ai.model.id", note="Vercel AI SDK"),
    attribute(claude_code.MODEL, when=claude_code.is_model_request, note="Claude Code"),
    attribute("langfuse.observation.model.name", note="Langfuse"),
    attribute(mlflow.MODEL, json_string, note="MLflow"),
    Source(
        f"`{haystack.LLM_OUTPUT}` → `meta.model` (Haystack)", haystack.model_name, trigger=haystack.LLM_OUTPUT
    ),
    attribute(genkit.NAME, when=genkit.is_model, note="Genkit model actions"),
    Source(
        f"events `{llamaindex.CHAT_END}` → `response.raw.model`, `{llamaindex.CHAT_START}` → "
        "`model_dict.model_name` (LlamaIndex's own integration)",
        llamaindex.model_name,
        trigger=llamaindex.RUN_ID,
    ),
    span_name_after("chat "),
    span_name_after("generate_content "),
)
PROVIDER: tuple[Source, ...] = (
    *attributes(semconv.PROVIDER_KEYS),
    *(attribute(key, note="OpenInference") for key in ("llm.provider", "llm.system")),
    attribute("ai.model.provider", note="Vercel AI SDK"),
    attribute(mlflow.PROVIDER, json_string, note="MLflow"),
    Source(f"`{genkit.NAME}` before `/` (Genkit model actions)", genkit.provider, trigger=genkit.NAME),
)
FINISH_REASONS: tuple[Source, ...] = (
    attribute("gen_ai.response.finish_reasons", str_tuple),
    attribute("llm.finish_reason", str_tuple, note="OpenInference"),
    attribute("ai.response.finishReason", str_tuple, note="Vercel AI SDK"),
    attribute("anthropic.message.stop_reason", str_tuple, note="the anthropic client's own tracing"),
    Source(
        f"`{haystack.LLM_OUTPUT}` → `meta.finish_reason` (Haystack)",
        haystack.finish_reasons,
        trigger=haystack.LLM_OUTPUT,
    ),
)
# Sources of ``(text, requested tools, finish reasons)``: each of the three is taken from the first
# source that has it.
MODEL_OUTPUT: tuple[Source, ...] = (
    Source(f"`{semconv.OUTPUT}`", semconv.output_messages, trigger=semconv.OUTPUT),
    Source(f"event `{semconv.DETAILS_EVENT}` → `{semconv.OUTPUT}`", semconv.details_output),
    Source(
        "`llm.output_messages.N.message.*` (OpenInference)",
        openinference.flat_output,
        trigger="llm.output_messages.0.message.role",
    ),
    Source("`gen_ai.completion.N.*` (Traceloop)", traceloop.indexed_completion),
    Source(f"`{langsmith.OUTPUTS}` (LangSmith)", langsmith.model_output, trigger=langsmith.OUTPUTS),
    Source("`ai.response.text` / `ai.response.toolCalls` (Vercel AI SDK)", vercel.response),
    Source(f"`{adk.LLM_RESPONSE}` (Google ADK)", adk.response_output, trigger=adk.LLM_RESPONSE),
    Source("`output.value` (OpenInference)", openinference.value_output, trigger="output.value"),
    Source(f"`{langfuse.OUTPUT}` (Langfuse)", langfuse.generation_output, trigger=langfuse.OUTPUT),
    Source("`output` / `response` (Logfire)", logfire.model_output, trigger=logfire.TEMPLATE),
    Source(f"`{haystack.LLM_OUTPUT}` (Haystack)", haystack.output, trigger=haystack.LLM_OUTPUT),
    Source(f"`{mlflow.OUTPUTS}` (MLflow)", mlflow.response_output, trigger=mlflow.OUTPUTS),
    Source(f"`{genkit.OUTPUT}` (Genkit)", genkit.response_output, trigger=genkit.OUTPUT),
    Source(f"`{any_agent.OUTPUT}` (any-agent)", any_agent.response_output, trigger=any_agent.OUTPUT),
    Source(
        f"event `{llamaindex.CHAT_END}` → `response.message.blocks` / `response.raw.choices` "
        "(LlamaIndex's own integration)",
        llamaindex.response_output,
        trigger=llamaindex.RUN_ID,
    ),
    Source("events `gen_ai.choice` / `gen_ai.content.completion`", semconv.events_output),
)
MODEL_INPUT: tuple[Source, ...] = (
    Source(f"`{semconv.INPUT}`", semconv.input_messages, trigger=semconv.INPUT),
    Source(f"event `{semconv.DETAILS_EVENT}` → `{semconv.INPUT}`", semconv.details_input),
    Source(
        "`llm.input_messages.N.message.*` (OpenInference)",
        openinference.flat_input,
        trigger="llm.input_messages.0.message.role",
    ),
    Source(f"`{langsmith.INPUTS}` (LangSmith)", langsmith.model_input, trigger=langsmith.INPUTS),
    Source("`gen_ai.prompt.N.*` / `gen_ai.prompt` (Traceloop)", traceloop.indexed_prompt),
    Source("`ai.prompt.messages` (Vercel AI SDK)", vercel.prompt_messages, trigger="ai.prompt.messages"),
    Source(f"`{adk.LLM_REQUEST}` (Google ADK)", adk.request_input, trigger=adk.LLM_REQUEST),
    Source("`input.value` (OpenInference)", openinference.value_input, trigger="input.value"),
    Source(f"`{langfuse.INPUT}` (Langfuse)", langfuse.generation_input, trigger=langfuse.INPUT),
    Source("`input` / `raw_input` (Logfire)", logfire.model_input, trigger=logfire.TEMPLATE),
    Source(f"`{haystack.LLM_INPUT}` (Haystack)", haystack.request_input, trigger=haystack.LLM_INPUT),
    Source(f"`{mlflow.INPUTS}` (MLflow)", mlflow.request_input, trigger=mlflow.INPUTS),
    Source(f"`{genkit.INPUT}` (Genkit)", genkit.request_input, trigger=genkit.INPUT),
    Source(_LLAMAINDEX_MESSAGES, llamaindex.request_input, trigger=llamaindex.RUN_ID),
    Source("events `gen_ai.user.message` / `gen_ai.content.prompt`", semconv.events_input),
)

# Results the request sends back for the previous response's calls (``(call id, result)`` pairs).
MODEL_TOOL_RESULTS: tuple[Source, ...] = (
    Source(f"`{semconv.INPUT}`", semconv.input_results, trigger=semconv.INPUT),
    Source(f"event `{semconv.DETAILS_EVENT}` → `{semconv.INPUT}`", semconv.details_results),
    Source(
        "`llm.input_messages.N.message.*` (OpenInference)",
        openinference.flat_results,
        trigger="llm.input_messages.0.message.role",
    ),
    Source("`input.value` (OpenInference)", openinference.value_results, trigger="input.value"),
    Source(f"`{langsmith.INPUTS}` (LangSmith)", langsmith.request_results, trigger=langsmith.INPUTS),
    Source(
        "`gen_ai.prompt.N.*` (Traceloop, AgentOps)", traceloop.indexed_results, trigger="gen_ai.prompt.0.role"
    ),
    Source("`ai.prompt.messages` (Vercel AI SDK)", vercel.prompt_results, trigger="ai.prompt.messages"),
    Source(f"`{haystack.LLM_INPUT}` (Haystack)", haystack.request_results, trigger=haystack.LLM_INPUT),
    Source(f"`{mlflow.INPUTS}` (MLflow)", mlflow.request_tool_results, trigger=mlflow.INPUTS),
    Source(f"`{genkit.INPUT}` (Genkit)", genkit.request_tool_results, trigger=genkit.INPUT),
    Source(_LLAMAINDEX_MESSAGES, llamaindex.request_tool_results, trigger=llamaindex.RUN_ID),
    Source(f"`{langfuse.INPUT}` (Langfuse generations)", langfuse.request_results, trigger=langfuse.INPUT),
    Source("events `gen_ai.tool.message` / `gen_ai.user.message`", semconv.events_results),
)

# Call ids among those results that the request sends back as failures (Anthropic's ``is_error``,
# Bedrock's ``status: error``, Gemini's ``error`` key): the only record of a failed call where no span
# shows it run.
MODEL_FAILED_RESULTS: tuple[Source, ...] = (
    Source(f"`{semconv.INPUT}`", semconv.input_failures, trigger=semconv.INPUT),
    Source(f"event `{semconv.DETAILS_EVENT}` → `{semconv.INPUT}`", semconv.details_failures),
    Source("`input.value` (OpenInference)", openinference.value_failures, trigger="input.value"),
    Source(_LANGSMITH_FAILURES, langsmith.request_failures, trigger=langsmith.INPUTS),
    Source(f"`{mlflow.INPUTS}` (MLflow)", mlflow.request_failed_results, trigger=mlflow.INPUTS),
    Source(f"`{langfuse.INPUT}` (Langfuse generations)", langfuse.request_failures, trigger=langfuse.INPUT),
    Source("events `gen_ai.user.message`", semconv.events_failures),
)

AGENT_NAME: tuple[Source, ...] = (
    attribute("gen_ai.agent.name"),
    attribute("agent.name", note="OpenInference"),
    attribute("agent_name", note="pydantic-ai"),
    attribute("traceloop.entity.name", when=_TRACELOOP_ENTITY, note="Traceloop"),
    attribute("traceloop.workflow.name", note="Traceloop"),
    attribute("ai.telemetry.functionId", note="Vercel AI SDK"),
    attribute("resource.name", when=has(vercel.OPERATION), note="Vercel AI SDK"),
    attribute("name", when=logfire.is_agent, note="Logfire `Agent run: {name!r}` spans"),
    attribute("graph.node.id", note="OpenInference LangGraph"),
    attribute(langsmith.NAME, note="LangSmith"),
    attribute("gen_ai.workflow.name"),
    attribute(genkit.NAME, when=genkit.is_agent, note="Genkit agent and flow actions"),
    attribute(agentops.NAME, when=agentops.is_agent, note="AgentOps agents, traces and workflows"),
    attribute(agentops.ROLE, when=agentops.is_agent, note="AgentOps' CrewAI agents"),
    span_name_after("invoke_agent "),
    span_name_after("invoke_workflow "),
    _own_span_name(
        (openinference.VOCABULARY, langfuse.VOCABULARY, mlflow.VOCABULARY),
        "agent",
        ".run",
        "span name (OpenInference without a `.run` suffix, Langfuse, MLflow)",
    ),
)
CONVERSATION_ID: tuple[Source, ...] = (
    *attributes(("gen_ai.conversation.id", "session.id")),
    attribute("traceloop.association.properties.session_id", note="Traceloop"),
    attribute("ai.telemetry.metadata.sessionId", note="Vercel AI SDK"),
    attribute("ai.telemetry.metadata.conversationId", note="Vercel AI SDK"),
    attribute(mastra.SESSION_ID, note="Mastra tracing metadata"),
    attribute("langfuse.session.id", note="Langfuse"),
    attribute("group_id", note="Logfire, the OpenAI Agents SDK's `RunConfig.group_id`"),
    *(attribute(key, note="LangSmith thread metadata") for key in langsmith.CONVERSATION_KEYS),
    attribute(genkit.SESSION_ID, note="Genkit agents"),
    *(attribute(key, note="AgentOps trace metadata") for key in agentops.CONVERSATION_KEYS),
)
AGENT_INPUT: tuple[Source, ...] = (
    Source(f"`{semconv.INPUT}`", semconv.input_messages, trigger=semconv.INPUT),
    Source(f"event `{semconv.DETAILS_EVENT}` → `{semconv.INPUT}`", semconv.details_input),
    Source(
        "`pydantic_ai.all_messages` (pydantic-ai)",
        pydantic_ai.all_messages_input,
        trigger="pydantic_ai.all_messages",
    ),
    Source(
        "`all_messages_events` (pydantic-ai 1.x)", pydantic_ai.events_input, trigger="all_messages_events"
    ),
    Source(f"`{traceloop.ENTITY_INPUT}` (Traceloop)", traceloop.entity_input, trigger=traceloop.ENTITY_INPUT),
    Source("`input.value` (OpenInference)", openinference.value_input, trigger="input.value"),
    Source(f"`{langfuse.INPUT}` (Langfuse)", langfuse.observation_input, trigger=langfuse.INPUT),
    Source(f"`{langsmith.INPUTS}` (LangSmith)", langsmith.run_input, trigger=langsmith.INPUTS),
    Source("`ai.prompt` (Vercel AI SDK)", vercel.prompt_text, trigger="ai.prompt"),
    Source(f"`{mastra.RUN_INPUT}` (Mastra)", mastra.run_input, trigger=mastra.RUN_INPUT),
    Source(f"`{haystack.RUN_INPUT}` (Haystack)", haystack.run_input, trigger=haystack.RUN_INPUT),
    Source(f"`{mlflow.INPUTS}` (MLflow)", mlflow.run_input, trigger=mlflow.INPUTS),
    Source(f"`{genkit.INPUT}` (Genkit)", genkit.run_input, trigger=genkit.INPUT),
    Source(
        "`agentops.<kind>.input` / `agentops.entity.input` (AgentOps)",
        agentops.run_input,
        trigger=agentops.KIND,
    ),
    attribute(claude_code.USER_PROMPT, when=claude_code.is_interaction, note="Claude Code"),
    Source("events `gen_ai.user.message` / `gen_ai.content.prompt`", semconv.events_input),
)
AGENT_OUTPUT: tuple[Source, ...] = (
    Source(f"`{semconv.OUTPUT}`", text_only(semconv.output_messages), trigger=semconv.OUTPUT),
    Source(f"event `{semconv.DETAILS_EVENT}` → `{semconv.OUTPUT}`", text_only(semconv.details_output)),
    attribute("final_result", note="pydantic-ai"),
    Source(
        f"`{traceloop.ENTITY_OUTPUT}` (Traceloop)", traceloop.entity_answer, trigger=traceloop.ENTITY_OUTPUT
    ),
    Source("`output.value` (OpenInference)", openinference.value_answer, trigger="output.value"),
    Source(f"`{langfuse.OUTPUT}` (Langfuse)", langfuse.observation_output, trigger=langfuse.OUTPUT),
    Source(f"`{langsmith.OUTPUTS}` (LangSmith)", langsmith.run_output, trigger=langsmith.OUTPUTS),
    *(attribute(key, note="Vercel AI SDK") for key in vercel.TEXT_KEYS),
    Source(f"`{mastra.RUN_OUTPUT}` (Mastra)", mastra.run_output, trigger=mastra.RUN_OUTPUT),
    Source(f"`{haystack.RUN_OUTPUT}` (Haystack)", haystack.run_output, trigger=haystack.RUN_OUTPUT),
    Source(f"`{mlflow.OUTPUTS}` (MLflow)", mlflow.run_output, trigger=mlflow.OUTPUTS),
    Source(f"`{genkit.OUTPUT}` (Genkit)", genkit.run_output, trigger=genkit.OUTPUT),
    Source(
        "`agentops.<kind>.output` / `agentops.entity.output` (AgentOps)",
        agentops.run_output,
        trigger=agentops.KIND,
    ),
    Source("events `gen_ai.choice`", text_only(semconv.events_output)),
)

# Every table, by the name the docs give the field.
TABLE: dict[str, tuple[Source, ...]] = {
    "tool name": TOOL_NAME,
    "tool call id": TOOL_CALL_ID,
    "tool arguments": TOOL_ARGUMENTS,
    "tool result": TOOL_RESULT,
    "model": MODEL_NAME,
    "provider": PROVIDER,
    "finish reasons": FINISH_REASONS,
    "model output (text, requested tools, finish reasons)": MODEL_OUTPUT,
    "model input (the user's last message)": MODEL_INPUT,
    "tool results sent back in the model input": MODEL_TOOL_RESULTS,
    "tool results sent back as failures": MODEL_FAILED_RESULTS,
    "agent name": AGENT_NAME,
    "conversation id": CONVERSATION_ID,
    "agent input": AGENT_INPUT,
    "agent output (answer)": AGENT_OUTPUT,
}
