"""The support agent's loop, instrumented by hand with OpenTelemetry GenAI spans.

Only the OpenTelemetry *API* is used here, as in a production agent: whoever runs the agent decides
which SDK, exporters and processors record the spans. One run is one trace:

    invoke_agent support_agent            gen_ai.conversation.id, app.customer_id, input/output messages
      chat <model>                        one per model turn: usage, finish reason, messages
      execute_tool <name>                 one per tool call, concurrent when a turn asks for several
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from opentelemetry import context
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

Message = dict[str, Any]
Tool = Callable[..., Any]


@dataclass(frozen=True)
class ToolRequest:
    call_id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Reply:
    """One model response: tool calls to run, or the final answer."""

    tool_calls: tuple[ToolRequest, ...] = ()
    text: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0


class Model(Protocol):
    name: str
    provider: str

    def reply(self, messages: Sequence[Message]) -> Reply: ...


def text_message(role: str, text: str) -> Message:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _assistant_message(reply: Reply) -> Message:
    parts: list[dict[str, Any]] = [
        {"type": "tool_call", "id": c.call_id, "name": c.name, "arguments": dict(c.arguments)}
        for c in reply.tool_calls
    ]
    if reply.text is not None:
        parts.append({"type": "text", "content": reply.text})
    return {"role": "assistant", "parts": parts}


@dataclass(frozen=True)
class ToolOutcome:
    request: ToolRequest
    response: Any
    ok: bool


class SupportAgent:
    """Runs a model/tool loop until the model answers, recording every step as a span."""

    def __init__(
        self,
        tracer: Tracer,
        model: Model,
        tools: Mapping[str, Tool],
        name: str = "support_agent",
        max_turns: int = 10,
    ) -> None:
        self.tracer = tracer
        self.model = model
        self.tools = tools
        self.name = name
        self.max_turns = max_turns
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tool")

    def run(self, user_message: str, customer_id: str, conversation_id: str) -> tuple[int, str | None]:
        """Answer one ticket; returns the run's trace id and the final answer."""
        messages: list[Message] = [text_message("user", user_message)]
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.name,
            "gen_ai.conversation.id": conversation_id,
            "gen_ai.input.messages": json.dumps(messages),
            "app.customer_id": customer_id,
        }
        answer: str | None = None
        with self.tracer.start_as_current_span(f"invoke_agent {self.name}", attributes=attributes) as root:
            for _ in range(self.max_turns):
                reply = self._chat(messages)
                messages.append(_assistant_message(reply))
                if not reply.tool_calls:
                    answer = reply.text
                    break
                outcomes = self._execute(reply.tool_calls)
                messages.append(
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": o.request.call_id, "response": o.response}
                            for o in outcomes
                        ],
                    }
                )
            root.set_attribute(
                "gen_ai.output.messages", json.dumps([text_message("assistant", answer or "")])
            )
            trace_id: int = root.get_span_context().trace_id
        return trace_id, answer

    def _chat(self, messages: Sequence[Message]) -> Reply:
        model = self.model
        with self.tracer.start_as_current_span(
            f"chat {model.name}",
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": model.provider,
                "gen_ai.request.model": model.name,
                "gen_ai.input.messages": json.dumps(messages),
            },
        ) as span:
            reply = model.reply(messages)
            span.set_attributes(
                {
                    "gen_ai.response.model": model.name,
                    "gen_ai.usage.input_tokens": reply.input_tokens,
                    "gen_ai.usage.output_tokens": reply.output_tokens,
                    "gen_ai.response.finish_reasons": ["tool_calls" if reply.tool_calls else "stop"],
                    "gen_ai.output.messages": json.dumps([_assistant_message(reply)]),
                }
            )
        return reply

    def _execute(self, requests: Sequence[ToolRequest]) -> list[ToolOutcome]:
        """Run the turn's tool calls concurrently, each in its own span under the agent span."""
        parent = context.get_current()
        futures = [self._pool.submit(self._call_tool, r, parent) for r in requests]
        return [f.result() for f in futures]

    def _call_tool(self, request: ToolRequest, parent: context.Context) -> ToolOutcome:
        with self.tracer.start_as_current_span(
            f"execute_tool {request.name}",
            context=parent,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": request.name,
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.id": request.call_id,
                "gen_ai.tool.call.arguments": json.dumps(dict(request.arguments)),
            },
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                result = self.tools[request.name](**request.arguments)
            except Exception as exc:
                # The model sees the error and decides what to do next; the span records the failure.
                span.set_attribute("error.type", type(exc).__name__)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                return ToolOutcome(request, {"error": f"{type(exc).__name__}: {exc}"}, ok=False)
            span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
            return ToolOutcome(request, result, ok=True)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
