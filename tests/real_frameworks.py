"""What each real framework's instrumentation records (tests/fixtures/real): the dialect of its steps
and what it leaves out. The real-fixture tests hold every framework to the full trajectory except
what is declared here, and assert that what is declared missing is indeed missing, so a declaration
cannot hide a field the parsers lost. The fixtures' ``notes`` and spans.txt show each omission.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Recorded:
    # Dialect of the tool, model and agent steps (None: the framework records no such span).
    tool: str | None = "semconv"
    model: str = "semconv"
    agent: str | None = "semconv"
    # Semantic Kernel calls kernel functions ``<plugin>-<function>``: the name the model calls.
    tool_prefix: str = ""
    # Tool spans carry the call's arguments / its call id (else only the model's request does).
    span_arguments: bool = True
    # Tool spans carry the call's result (AutoGen's show it only in the next model request).
    span_results: bool = True
    # LangChain tools of one argument record its bare value (``C023``), not an object.
    bare_single_arguments: bool = False
    span_call_ids: bool = True
    # The model's responses (text and requested calls) and requests (the user's message) are on the
    # model spans.
    responses: bool = True
    requests: bool = True
    # Only the first model call of a run records its request (any-agent sets `gen_ai.input.messages`
    # once per trace): the later requests, and the results they send back, are recorded nowhere.
    first_request_only: bool = False
    # The responses on the model spans list the calls the model requested (Mastra's chat spans record
    # the text only; the calls are only in its own `mastra.model_step.output` on the step span).
    requested_calls: bool = True
    # The user's message reaches the model in a template of the framework's ("Current Task: ...").
    input_verbatim: bool = True
    # Where the conversation id is: "agent" (the agent span), "trace" (another span), None (nowhere).
    conversation: str | None = "agent"
    # The framework ends a run through a structured-output tool of its own.
    output_tool: str | None = None
    model_name: str = "gpt-4o-mini"
    # BeeAI records the response with two calls as one call whose arguments are both JSON texts.
    merged_parallel_request: bool = False
    # Call ids anywhere, on tool spans or in the model's requests (DSPy's ChatAdapter has none).
    call_ids: bool = True
    # The responses on the model spans give the requested calls' ids (LiteLLM's OpenTelemetry logger
    # records the calls without them: the ids are only in the next request, which repeats the calls).
    response_call_ids: bool = True
    # The agent span names the agent (Haystack's `haystack.agent.run` does not).
    agent_named: bool = True
    # The name the instrumentation gives the agent instead of its own (OpenLLMetry's LlamaIndex root
    # span names the workflow's class).
    agent_alias: str | None = None
    # Without tool spans, the next request marks the failed call's result as a failure (Anthropic's
    # `is_error`, Haystack's `error=True`); CrewAI's and the LiteLLM loops' requests carry no such flag
    # (the failure is only text), and OpenLLMetry's record of Anthropic's requests drops it.
    request_failures: bool = True
    # Model spans per call: a client library's instrumentation under the framework's own records each
    # call again, nested in the framework's model span (botocore's `chat` span in pydantic-ai's), with
    # the same usage; the outer span holds the messages.
    model_layers: int = 1
    # Tool spans per call: tools on an MCP server are also recorded by the MCP client's and the
    # server's `tools/call <name>` spans, nested in the framework's own.
    layers: int = 1
    # The key under which the framework wraps a result that is not an object (Google ADK: `result`).
    result_key: str | None = None
    # The model answers in DSPy ChatAdapter sections: the requested call and the answer are text.
    adapter_sections: bool = False
    # The model answers in ReAct's text format (LlamaIndex's ReActAgent): each response requests one
    # call as `Action:` / `Action Input:` text, and the last one is the `Thought: … Answer: …`
    # scaffold around the answer.
    react_text: bool = False
    # Agent spans a framework writes for something else than the agent (OpenLIT: LangGraph's nodes).
    node_agents: tuple[str, ...] = ()
    # Usage on an agent span is the run's total (OpenLIT's root span repeats the last call's).
    agent_usage_is_total: bool = True
    # One model span covers the SDK's whole function-calling loop (Google GenAI's automatic function
    # calling inside `generate_content`): it records the first request and the last response with
    # that call's usage only; the earlier calls and their usage are recorded nowhere.
    model_loop_span: bool = False
    # The call ids are the instrumentation's, made up as ``<name>_<part index>`` for calls the model
    # gave none (Google GenAI's for Gemini's function calls), not the scripted model's ``call_N``.
    made_up_call_ids: bool = False
    # The calls a response requested are spans of their own under the model call's (AgentOps'
    # `tool_call.<name>`), not attributes of the response: steps that record a request, not a run.
    request_spans: bool = False
    # The model requests its calls as a program (smolagents' CodeAgent: a `Thought:` and a `<code>`
    # block in the response text, run by the framework's Python interpreter): the responses hold code,
    # not calls, and the calls are the tool spans opened as the code ran.
    code_actions: bool = False
    # The resource of the instrumentation's own TracerProvider, when the generator cannot give it the
    # fixtures' `support-agent-<framework>` / `1.0.0` (AgentOps: `service.name=agentops`, no version).
    service: tuple[str, str | None] | None = None
    # Calls that run another agent (the OpenAI Agents SDK's handoff tool `transfer_to_<agent>`, tools
    # made with `Agent.as_tool`): tool calls of the trajectory beside the scenario's, held to facts.json's
    # `agent_calls` (every call with the agent that made it) rather than its `tool_calls`. The agents a
    # run hands over to or runs as tools are facts.json's `agents`, and their model calls get the
    # input the calling agent gave them, not the user's message.
    agent_calls: tuple[str, ...] = ()
    # Those of them that no tool span names (the SDK's handoff span `handoff to <agent>` names the
    # two agents, not the tool or the call): the trajectory has them from the model's request only.
    unnamed_calls: tuple[str, ...] = ()
    # Without tool spans, the next request's tool messages name the calls they answer (AgentOps' record
    # of CrewAI's requests keeps each message's role and content only: the results, without call ids,
    # cannot be joined to their calls).
    request_result_ids: bool = True
    # Usage on each model span is that call's (AgentOps' CrewAI `LLM.call` spans record the agent's
    # running total so far, CrewAI's token counter: the dialect says so, and the builder takes each
    # call's own as the difference).
    per_call_usage: bool = True


REAL = Path(__file__).parent / "fixtures" / "real"
BEDROCK_CLAUDE = "anthropic.claude-3-5-sonnet-20240620-v1:0"


def run_files(framework: str, scenario: str, ext: str = "otlp.pb") -> list[Path]:
    """The files of one recorded run: its trace and, where the instrumentation writes the messages as
    GenAI events (log records), those records (``<scenario>.logs.json``)."""
    logs = REAL / framework / f"{scenario}.logs.json"
    return [REAL / framework / f"{scenario}.{ext}", *([logs] if logs.exists() else [])]


# Runs of other scenarios than the support agent's, one folder deeper (``retrieval/<framework>/``):
# the suites that hold every recording to what its spans say (not to the support scenario's facts)
# read them too.
OTHER_SCENARIOS = ("retrieval", "memory")


def recorded_traces(ext: str = "otlp.pb") -> list[Path]:
    """Every recorded run's trace file: the support scenario's and the other scenarios'."""
    found = list(REAL.glob(f"*/*.{ext}"))
    for folder in OTHER_SCENARIOS:
        found += REAL.glob(f"{folder}/*/*.{ext}")
    return sorted(found)


def is_call_id(recorded: Recorded, name: str, call_id: str | None) -> bool:
    """Whether ``call_id`` is the id the framework records for a call of tool ``name``: the scripted
    model's ``call_N``, or the instrumentation's made-up ``<name>_<part index>``."""
    if not call_id:
        return False
    if recorded.made_up_call_ids:
        return re.fullmatch(rf"{re.escape(name)}_\d+", call_id) is not None
    return call_id.startswith("call_")


def speaking(dialect: str, **flags: Any) -> Recorded:
    """A framework whose tool, model and agent spans all speak ``dialect``."""
    return Recorded(tool=dialect, model=dialect, agent=dialect, **flags)


FRAMEWORKS: dict[str, Recorded] = {
    "agent_framework": Recorded(),
    # A hand-written tool loop over the `anthropic` client under openinference-instrumentation-anthropic:
    # LLM spans only (under the user's plain root span), no tool or agent spans; the calls, their ids
    # and results are in the flattened `llm.input_messages` / `llm.output_messages`, the failure only
    # as `is_error` in the request body (`input.value`); `session.id` from `using_attributes` on the
    # LLM spans.
    "anthropic_openinference": Recorded(
        tool=None, model="openinference", agent=None, conversation="trace", model_name="claude-sonnet-4-5"
    ),
    # The same loop under OpenLLMetry's opentelemetry-instrumentation-anthropic: `anthropic.chat` spans
    # with GenAI `gen_ai.input.messages` / `gen_ai.output.messages` (tool_call / tool_call_response
    # parts with the ids), whose tool_call_response parts drop `is_error`; no conversation id
    # (association properties need traceloop-sdk).
    "anthropic_traceloop": Recorded(
        tool=None, agent=None, conversation=None, request_failures=False, model_name="claude-sonnet-4-5"
    ),
    # The same loop under the anthropic client's own tracing alone (`open_telemetry={"tracer_provider",
    # "traces": {"content_mode": "content"}, "conversation_id"}`): CLIENT spans
    # `anthropic.messages.create` with GenAI `gen_ai.input.messages` / `gen_ai.output.messages`
    # (tool_call / tool_call_response parts with the ids, results as Anthropic text blocks) whose
    # tool_call_response parts drop `is_error`; the conversation id as `gen_ai.conversation.id` on
    # every model span.
    "anthropic_native": Recorded(
        tool=None, agent=None, conversation="trace", request_failures=False, model_name="claude-sonnet-4-5"
    ),
    "agno_openinference": speaking("openinference", span_call_ids=False),
    "autogen_agentchat": Recorded(span_arguments=False, span_results=False, conversation=None),
    # AutoGen core's runtime (SingleThreadedAgentRuntime(tracer_provider=...)) with a RoutedAgent running
    # tool_agent_caller_loop against a ToolAgent, the agent's create_agent / invoke_agent spans opened
    # with autogen-core's own helpers, the OpenAI client under opentelemetry-instrumentation-openai-v2:
    # `execute_tool` spans name the tool and its call id but carry neither arguments nor result (the
    # arguments only in the runtime's `message` attribute on the parent `autogen process` span, the
    # results only in the next chat request); the conversation is only the agent's key
    # (`gen_ai.agent.id`), not a conversation id.
    "autogen_core": Recorded(span_arguments=False, span_results=False, conversation=None),
    # boto3 `bedrock-runtime` `converse` in a hand-written loop under OpenTelemetry's contrib botocore
    # instrumentation, the loop's invoke_agent / execute_tool spans from util-genai: the `chat` spans
    # record the model, usage and finish reasons only; the messages, the requested toolUse blocks and
    # the toolResult blocks sent back are GenAI events, log records in the chat span's context
    # (`<scenario>.logs.json`), read with the trace.
    "bedrock_botocore": Recorded(model_name=BEDROCK_CLAUDE),
    "beeai_openinference": speaking(
        "openinference",
        span_call_ids=False,
        output_tool="final_answer",
        merged_parallel_request=True,
    ),
    "crewai_openinference": speaking(
        "openinference",
        span_call_ids=False,
        input_verbatim=False,
    ),
    "crewai_traceloop": Recorded(
        tool=None, agent="traceloop", input_verbatim=False, conversation=None, request_failures=False
    ),
    # DSPy ReAct (openinference-instrumentation-dspy, with -litellm for the token counts): the model
    # names the next tool in ChatAdapter sections (no tool calls, no call ids anywhere), the loop
    # ends through ReAct's `finish` tool, and the user's message and the answer are sections of the
    # requests and the last response; no agent span, tool spans `<tool>.__call__` without `tool.name`.
    "dspy_openinference": Recorded(
        tool="openinference",
        model="openinference",
        agent=None,
        span_call_ids=False,
        call_ids=False,
        conversation="trace",
        output_tool="finish",
        adapter_sections=True,
        model_name="openai/gpt-4o-mini",
    ),
    "google_adk": Recorded(model_name="openai/gpt-4o-mini", result_key="result"),
    # Haystack's own tracer (`opentelemetry-haystack`, content tracing on): `haystack.agent.*` spans,
    # the content as JSON attributes; the agent has no name and no conversation id is recorded.
    "haystack_native": speaking(
        "haystack",
        agent_named=False,
        span_call_ids=False,
        conversation=None,
    ),
    # Haystack under openinference-instrumentation-haystack: only component `run` methods are traced
    # and the Agent runs its tools outside any component, so there is no tool span; the flattened
    # messages name the calls without ids and the results sent back as roles without content, and
    # `input.value` / `output.value` keep the messages printed with `repr()` (ids and results).
    "haystack_openinference": Recorded(
        tool=None,
        model="openinference",
        agent=None,
        span_call_ids=False,
        conversation="trace",
    ),
    "google_adk_openinference": speaking(
        "openinference",
        model_name="openai/gpt-4o-mini",
        result_key="result",
    ),
    "langgraph_openinference": speaking("openinference", bare_single_arguments=True),
    # OpenLIT (`openlit.init`): LangGraph's model node is an `invoke_agent model` span too, and the
    # root `invoke_workflow` span repeats the usage of the last model call, not the run's total.
    # The Langfuse Python SDK's own spans (`@observe`, the `langfuse.openai` drop-in): tool spans
    # carry no call id (the ids are only in the generations' messages).
    "langfuse_sdk": speaking("langfuse", span_call_ids=False),
    # Langfuse's LangChain integration (`langfuse.langchain.CallbackHandler`) on the LangGraph agent:
    # Langfuse observations; a tool's output is the ToolMessage's fields as JSON, its call id in the
    # span's `langfuse.observation.metadata.tool_call_id`.
    "langgraph_langfuse": speaking("langfuse"),
    # LangSmith's OpenTelemetry export (`LANGSMITH_TRACING_MODE=otel`) of LangChain's tracer on the
    # LangGraph agent: a span per LangSmith run (`langsmith.span.kind` tool / llm / chain), the run's
    # inputs and outputs as JSON in `gen_ai.prompt` / `gen_ai.completion`, the tool call id as
    # `gen_ai.tool.call.id`, the thread id in `langsmith.metadata.thread_id` on every span; nothing
    # is left out.
    "langgraph_langsmith": speaking("langsmith"),
    "langgraph_openlit": Recorded(node_agents=("model",), agent_usage_is_total=False),
    "langgraph_traceloop": Recorded(tool="traceloop", agent="traceloop"),
    # OpenLLMetry's LlamaIndex instrumentation with its OpenAI client instrumentation (it opens no span
    # for the `OpenAI` LLM): a tool call is a workflow `task` span with `tool.name` (call id, result and
    # `is_error` in its output), the root span names the workflow's class, no conversation id.
    "llamaindex_traceloop": Recorded(
        tool="traceloop", agent="traceloop", agent_alias="FunctionAgent.workflow", conversation=None
    ),
    # A hand-written loop over `litellm.completion` under openinference-instrumentation-litellm: one
    # `completion` LLM span per call under a plain root span of the loop's; no agent span, no tool
    # spans (the calls are the responses' requests, their results the next requests' tool messages,
    # ids from `input.value`); `using_attributes(session_id=…)` puts `session.id` on every model span.
    "litellm_openinference": Recorded(
        tool=None,
        model="openinference",
        agent=None,
        conversation="trace",
        model_name="openai/gpt-4o-mini",
        request_failures=False,
    ),
    # The same loop under LiteLLM's own OpenTelemetry callback (`callbacks = ["otel"]`,
    # USE_OTEL_LITELLM_REQUEST_SPAN=true): a `litellm_request` chat span per call, GenAI semconv keys
    # beside OpenLLMetry's `llm.request.type` (which classifies it); no agent span, no tool spans, the
    # responses' calls without ids (`gen_ai.completion.N.function_call.*`: the ids are only in the next
    # request), and no conversation id (request metadata is not recorded).
    "litellm_otel": Recorded(
        tool=None,
        model="traceloop",
        agent=None,
        conversation=None,
        response_call_ids=False,
        request_failures=False,
    ),
    "llamaindex_openinference": Recorded(
        tool="openinference", model="openinference", agent=None, span_call_ids=False, conversation="trace"
    ),
    # LlamaIndex's ReActAgent under the same instrumentation: no native tool calls, the model asks for
    # one call per response in ReAct's text (`Action:` / `Action Input:`, no call id anywhere: the
    # agent's own uuids are only in the CHAIN steps' Python reprs) and answers in a `Thought: …
    # Answer: …` scaffold; the tool results go back as `Observation: …` user messages. Tool spans
    # `FunctionTool.acall` record the arguments and results; the root `ReActAgent.run` (CHAIN, no
    # agent span) records the returned answer only inside a `StopEvent(...)` repr cut after 200
    # characters (the whole answer: the `ReActOutputParser.parse` span's JSON `response`).
    "llamaindex_react": Recorded(
        tool="openinference",
        model="openinference",
        agent=None,
        span_call_ids=False,
        call_ids=False,
        conversation="trace",
        react_text=True,
    ),
    # LlamaIndex's own OpenTelemetry integration (`llama-index-observability-otel`, the agent with
    # `streaming=False`): spans `<class>.<method>` whose only attributes are LlamaIndex's instrument tags,
    # the content in span events. A tool is `FunctionTool.acall`, named with its arguments and call id
    # only in the step's `llamaindex.step.input_summary` (`ToolCall(tool_name=…, tool_kwargs=…,
    # tool_id=…)`), without its result (whole only in the next request's messages); a model call is
    # `OpenAI.achat` with `LLMChatStartEvent` / `LLMChatEndEvent` events. The root `FunctionAgent.run`
    # carries no attribute and the agent's name appears nowhere: no agent span; `instrument_tags` puts
    # `session.id` on every other span.
    "llamaindex_otel": Recorded(
        tool="llamaindex", model="llamaindex", agent=None, span_results=False, conversation="trace"
    ),
    "logfire_openai_agents": speaking("logfire", span_call_ids=False, conversation="trace"),
    "logfire_pydantic_ai": Recorded(agent="pydantic_ai"),
    # MLflow Tracing exported over OTLP (`mlflow.openai.autolog()` on a hand-written loop, tools and the
    # run as `@mlflow.trace` functions of span type TOOL / AGENT): MLflow's own `mlflow.*` attributes
    # (JSON text); tool spans carry no call id (the ids are only in the chat spans' messages), and the
    # session (`update_current_trace(session_id=…)`: trace metadata) is not exported.
    "mlflow_openai": speaking("mlflow", span_call_ids=False, conversation=None),
    # Mastra (JavaScript, `@mastra/otel-exporter`): its `chat` spans record the response text and
    # usage but neither the input messages nor the requested calls (those are only in Mastra's own
    # `mastra.model_step.*` attributes of the `agent_step` spans); the conversation id only as
    # tracing metadata (`mastra.metadata.sessionId`, on every span).
    "mastra": Recorded(requests=False, requested_calls=False),
    # Genkit (JavaScript, its own tracing through `enableTelemetry`): `genkit:*` attributes only; a
    # `ai.defineAgent` agent (subtype agent, with its session id) around Genkit's generate loop, whose
    # model actions record the request and response in Genkit's message shape (the call ids are their
    # `ref`s) and whose tool actions record arguments and results but no call id; models are named
    # with their plugin namespace (`openai/gpt-4o-mini`).
    "genkit": speaking("genkit", span_call_ids=False, model_name="openai/gpt-4o-mini"),
    "openai_agents": speaking("openinference", span_call_ids=False),
    # The same instrumentation on three agents: `triage_agent` hands over to `support_agent`, which runs
    # `billing_agent` as its tool `ask_billing`. Every agent is an AGENT span (`agent.name`), the
    # as_tool run nested in the `ask_billing` TOOL span; the handoff is a TOOL span `handoff to
    # support_agent` without `tool.name` or call id (input.value / output.value: the two agents' names);
    # the trace's root AGENT span is named after `RunConfig.workflow_name` (`customer_support`), not
    # after the starting agent; tool spans carry no call id.
    "openai_agents_handoffs": speaking(
        "openinference",
        span_call_ids=False,
        agent_alias="customer_support",
        agent_calls=("transfer_to_support_agent", "ask_billing"),
        unnamed_calls=("transfer_to_support_agent",),
    ),
    # OpenLIT (`openlit.init`) on the OpenAI Agents SDK: its tool spans carry no call id (the ids are
    # on the `chat` spans' requested calls).
    "openai_agents_openlit": Recorded(span_call_ids=False),
    # OpenTelemetry's contrib instrumentation (`opentelemetry-instrumentation-openai-agents-v2`): tool
    # spans carry no call id, a response with calls is the SDK message printed as a dict in one text
    # part, and the conversation id is not recorded.
    "openai_agents_otel": Recorded(span_call_ids=False, conversation=None),
    # OpenLLMetry's Agents SDK trace processor and its OpenAI client instrumentation (the processor
    # records neither the response nor the usage of Chat Completions): tool spans carry no call id,
    # the root `Agent Workflow` span's name is a constant, and no conversation id is recorded
    # (association properties need traceloop-sdk).
    "openai_agents_traceloop": Recorded(
        tool="traceloop", agent="traceloop", span_call_ids=False, conversation=None
    ),
    # The Google Gen AI SDK's automatic function calling in `client.models.generate_content` under
    # OpenTelemetry's contrib `opentelemetry-instrumentation-google-genai` (through util-genai), the
    # run wrapped in util-genai's `invoke_local_agent`: one `generate_content` span for the whole loop
    # (the user's message, the answer and the last call's usage), the `execute_tool` spans (arguments,
    # results, the failure) inside it; Gemini's calls carry no id and none is recorded.
    "google_genai": Recorded(
        model_name="gemini-2.5-flash",
        model_loop_span=True,
        requested_calls=False,
        span_call_ids=False,
        call_ids=False,
    ),
    # The same SDK's chat API (`client.chats.create(...).send_message`), whose own AFC loop calls
    # `generate_content` once per model call and runs the functions unwrapped: a `generate_content`
    # span per call (the conversation so far, the response's calls, usage), no tool spans; the
    # instrumentation makes up the call ids (`<name>_<part index>`, Gemini sends none) and the failure
    # is the function response `{"error": ...}` the SDK sends back.
    "google_genai_chat": Recorded(tool=None, model_name="gemini-2.5-flash", made_up_call_ids=True),
    "openai_v2": Recorded(),
    # The same loop with util-genai's capture mode `event_only`: no content on any span (tool spans
    # without arguments or results); each chat span's messages are a
    # `gen_ai.client.inference.operation.details` log record (`<scenario>.logs.json`).
    "openai_v2_events": Recorded(span_arguments=False, span_results=False),
    "pydantic_ai": Recorded(agent="pydantic_ai"),
    # pydantic-ai with its tools on an MCP server over stdio (MCPToolset → FastMCP client → the MCP
    # SDK's server in a subprocess): each call is also FastMCP's `tools/call <name>` CLIENT span and
    # the server's `tools/call <name>` SERVER span, both `gen_ai.operation.name=execute_tool`.
    "pydantic_ai_mcp": Recorded(agent="pydantic_ai", layers=3),
    "pydantic_ai_v1": Recorded(tool="pydantic_ai", agent="pydantic_ai"),
    # pydantic-ai 2.x on Amazon Bedrock (`BedrockConverseModel` over a boto3 `bedrock-runtime` client),
    # its own instrumentation: as `pydantic_ai`, with the provider named `bedrock` and the tool calls'
    # arguments as objects in the chat spans' messages; nothing is left out.
    "pydantic_ai_bedrock": Recorded(agent="pydantic_ai", model_name=BEDROCK_CLAUDE),
    # The same agent with OpenTelemetry's contrib botocore instrumentation enabled too: each model call
    # is also the botocore Bedrock Runtime extension's `chat <modelId>` span (`gen_ai.system=aws.bedrock`),
    # a child of pydantic-ai's, with the same usage and finish reasons but no messages (content capture
    # off by default); nothing is left out.
    "pydantic_ai_bedrock_botocore": Recorded(agent="pydantic_ai", model_name=BEDROCK_CLAUDE, model_layers=2),
    # pydantic-ai 2.x with openinference-instrumentation-pydantic-ai's `OpenInferenceSpanProcessor`:
    # OpenInference attributes beside pydantic-ai's GenAI ones on the same spans (the span kind decides
    # the dialect); nothing is left out.
    "pydantic_ai_openinference": speaking("openinference"),
    "semantic_kernel": Recorded(tool_prefix="support-", responses=False, requests=False, conversation=None),
    "smolagents_openinference": speaking(
        "openinference",
        span_call_ids=False,
        output_tool="final_answer",
    ),
    # smolagents' CodeAgent under the same instrumentation: the model answers with a `Thought:` and a
    # `<code>` block that calls the tools as Python functions and ends the run with `final_answer(...)`.
    # Every call the interpreter makes is a TOOL span with its arguments and result, but no response
    # lists a call (the code is the response's text, finish reason `stop`), and no call id exists
    # anywhere (smolagents' own `python_interpreter` pseudo-call per step, `call_<step>`, is only text
    # in the next request).
    "smolagents_code": speaking(
        "openinference",
        span_call_ids=False,
        call_ids=False,
        requested_calls=False,
        code_actions=True,
        output_tool="final_answer",
    ),
    "strands": Recorded(),
    "strands_latest": Recorded(),
    # Vercel AI SDK (JavaScript): the agent's name only as the telemetry functionId, the conversation
    # id only as telemetry metadata (`ai.telemetry.metadata.sessionId`); nothing else is left out.
    # OpenLLMetry's full SDK (`Traceloop.init(exporter=…)`) on a hand-written loop over the openai
    # client: `@agent` / `@tool` decorator spans (`traceloop.entity.input` / `.output` JSON), chat
    # spans from its bundled OpenAI instrumentation in GenAI semconv only; tool spans carry no call id
    # (the ids are only in the chat spans' messages), and the association properties (`session_id`,
    # `app.customer_id`), set inside the `@agent` function, are on the chat and tool spans, not on the
    # agent span.
    "traceloop_sdk": Recorded(tool="traceloop", agent="traceloop", span_call_ids=False, conversation="trace"),
    "vercel_ai": speaking("vercel"),
    # AgentOps (`agentops.init(exporter_endpoint=…)` on its own TracerProvider) on a hand-written loop
    # over the openai client: `@trace` / `@agent` / `@tool` decorator spans (`agentops.span.kind`,
    # `operation.name`, `agentops.<kind>.input` / `.output`), chat spans from its OpenAI instrumentation
    # (flattened `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`) whose requested calls are child spans
    # `tool_call.<name>` with their ids; tool spans carry no call id; the conversation id is trace
    # metadata on the session span (`trace.metadata.conversation_id`); AgentOps' resource names no
    # service of ours and no version.
    # mozilla-ai's any-agent (its `tinyagent` loop), traced by any-agent's own spans: `invoke_agent
    # [<name>]`, `call_llm <model>` (`gen_ai.operation.name=call_llm`, a value of its own) and
    # `execute_tool <name>`, with its own keys beside the conventions': the tool's arguments in
    # `gen_ai.tool.args`, results and model responses in `gen_ai.output` (a response's calls as a
    # JSON list of `{"tool.name", "tool.args"}`). No call id anywhere (neither on the tool spans nor
    # in the responses, and the requests that would repeat them are not recorded: only the first
    # model call records its input), and no conversation id (any-agent has no session or metadata).
    "any_agent": Recorded(
        tool="any_agent",
        model="any_agent",
        span_call_ids=False,
        call_ids=False,
        response_call_ids=False,
        first_request_only=True,
        conversation=None,
    ),
    "agentops_openai": Recorded(
        tool="agentops",
        agent="agentops",
        span_call_ids=False,
        request_spans=True,
        service=("agentops", None),
    ),
    # A CrewAI crew (LiteLLM route) under AgentOps' CrewAI instrumentation: `crewai.workflow`
    # (kind workflow) > the task (kind `workflow.step`, no step) > `<role>.agent` (kind agent, named by
    # `agent.role`) > `<model>.llm` (kind llm) per model call, flattened `gen_ai.prompt.N.*` /
    # `gen_ai.completion.0.*`. No tool spans (CrewAI's native tool loop is not wrapped): a response's
    # calls only as the printed list of LiteLLM's tool-call objects in its completion content, their
    # results only as the next request's `role=tool` messages, without call ids; the failure only as
    # CrewAI's "Error executing tool: ..." text. Usage on each model span is the agent's running total.
    # The user's message inside CrewAI's task prompt; the conversation id is trace metadata on the
    # session span; AgentOps' own resource.
    "crewai_agentops": Recorded(
        tool=None,
        model="agentops",
        agent="agentops",
        input_verbatim=False,
        request_failures=False,
        model_name="openai/gpt-4o-mini",
        service=("agentops", None),
        request_result_ids=False,
        per_call_usage=False,
    ),
}

# The scenario's tools, as the example policy and golden cases name them.
TOOLS = ("get_subscription", "list_invoices", "check_payment", "create_refund_request")


def with_framework_tools(framework: str, path: Path, tmp: Path) -> Path:
    """``path`` (the example policy or cases) with the tools named as the framework names them
    (Semantic Kernel: ``support-list_invoices``): a copy in ``tmp``, else ``path`` itself."""
    prefix = FRAMEWORKS[framework].tool_prefix
    if not prefix:
        return path
    text = path.read_text()
    for tool in TOOLS:
        text = re.sub(rf"\b{tool}\b", prefix + tool, text)
    renamed = tmp / path.name
    renamed.write_text(text)
    return renamed
