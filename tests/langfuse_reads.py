"""The read side of the test Langfuse server: ``GET /api/public/v2/observations``, answered with bodies
built from the ``langfuse`` package's own models (``ObservationV2``, ``ObservationsV2Response``; an
observation the models reject fails the test), cursor-paginated, filtered as the API's ``filter``
parameter says; and recorded OTLP/JSON fixtures turned into the observations Langfuse's
OpenTelemetry ingestion stores (``OtelIngestionProcessor``: the span's attributes, less the keys it
moves into input and output, JSON-encoded to text in ``metadata.attributes``; the resource in
``metadata.resourceAttributes``; the scope in ``metadata.scope``; times to the millisecond; the
observation named as ``extractName`` names it; of the span events only the per-message ones, moved
into input and output; no span kind; the Langfuse SDK's own spans keep no attributes, only the typed
fields). Read from ``packages/shared/src/server/otel/OtelIngestionProcessor.ts`` of langfuse/langfuse
(commit 0030ed8); its legacy ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events, LiveKit's
keys and Logfire's ``events`` attribute are left out: no recorded run carries them.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langfuse.api.commons.types.observation_v2 import ObservationV2
from langfuse.api.core.jsonable_encoder import jsonable_encoder
from langfuse.api.core.pydantic_utilities import parse_obj_as
from langfuse.api.observations.types.observations_v2response import ObservationsV2Response

from otel_traj.adapters.otlp_json import any_value

OBSERVATIONS_PATH = "/api/public/v2/observations"
PROJECT = "project-test"

# The keys Langfuse's ingestion takes input and output from, deleted from the attributes it keeps.
_IO_KEYS = {
    "langfuse.trace.input", "langfuse.trace.output", "langfuse.observation.input",
    "langfuse.observation.output", "ai.prompt.messages", "ai.prompt", "ai.toolCall.args", "ai.response.text",
    "ai.result.text", "ai.toolCall.result", "ai.response.object", "ai.result.object", "ai.response.toolCalls",
    "ai.result.toolCalls",
    "gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response", "gcp.vertex.agent.tool_call_args",
    "gcp.vertex.agent.tool_response", "prompt", "all_messages_events", "events", "mlflow.spanInputs",
    "mlflow.spanOutputs", "traceloop.entity.input", "traceloop.entity.output", "input.value", "output.value",
    "final_result", "pydantic_ai.all_messages", "input", "output", "gen_ai.input.messages",
    "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
}  # fmt: skip
_IO_PREFIXES = ("gen_ai.prompt", "gen_ai.completion", "llm.input_messages", "llm.output_messages")
# The per-message events Langfuse takes a span's input from, in the span's order (their role from
# their name); ``gen_ai.choice`` events are its output.
_MESSAGE_EVENTS = (
    "gen_ai.system.message",
    "gen_ai.user.message",
    "gen_ai.assistant.message",
    "gen_ai.tool.message",
)
# Langfuse's order: the first pair with a value is the observation's input and output.
_PAIRS = (
    ("gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response"),
    ("prompt", "all_messages_events"),
    ("mlflow.spanInputs", "mlflow.spanOutputs"),
    ("traceloop.entity.input", "traceloop.entity.output"),
    ("input.value", "output.value"),
    ("input", "output"),
)


def _nested(attrs: dict[str, Any], prefix: str) -> Any:
    """Langfuse's ``convertKeyPathToNestedObject``: the value of ``prefix`` itself when it has one,
    else ``prefix.0.role`` keys as a list of objects."""
    if attrs.get(prefix):
        return attrs[prefix]
    keys = {k[len(prefix) + 1 :]: v for k, v in attrs.items() if k.startswith(prefix + ".")}
    if not keys:
        return None
    result: list[dict[str, Any]] = []
    for path, value in keys.items():
        parts = path.split(".")
        index = int(parts[0])
        while len(result) <= index:
            result.append({})
        node: Any = result[index]
        for i, part in enumerate(parts[1:-1], start=1):
            nxt: Any = [] if parts[i + 1].isdigit() else {}
            if isinstance(node, list):
                while len(node) <= int(part):
                    node.append(None)
                node[int(part)] = node[int(part)] if node[int(part)] is not None else nxt
                node = node[int(part)]
            else:
                node = node.setdefault(part, nxt)
        last = parts[-1]
        if isinstance(node, list):
            while len(node) <= int(last):
                node.append(None)
            node[int(last)] = value
        else:
            node[last] = value
    return result


def ingested_io(attrs: dict[str, Any], scope: str, events: list[Any]) -> tuple[Any, Any]:
    """Langfuse's ``extractInputAndOutput``, for the keys recorded fixtures carry."""
    get = attrs.get
    if get("langfuse.observation.input") is not None or get("langfuse.observation.output") is not None:
        return get("langfuse.observation.input"), get("langfuse.observation.output")
    if scope == "ai":
        value_in = get("ai.prompt.messages", get("ai.prompt", get("ai.toolCall.args")))
        if "ai.response.text" in attrs and "ai.response.toolCalls" in attrs:
            # The calls as the attribute holds them: JSON text inside the JSON of the message.
            calls = attrs["ai.response.toolCalls"]
            out = {"role": "assistant", "content": attrs["ai.response.text"], "tool_calls": calls}
            return value_in, json.dumps(out)
        for key in ("ai.response.text", "ai.result.text", "ai.toolCall.result", "ai.response.object"):
            if get(key):
                return value_in, get(key)
        return value_in, get("ai.response.toolCalls")
    messages = [e for e in events if e["name"] in _MESSAGE_EVENTS]
    choices = [e for e in events if e["name"] == "gen_ai.choice"]
    if messages or choices:
        value_in = [{"role": e["name"][7:-8], **_attrs(e)} for e in messages] or None
        value_out = [_attrs(e) for e in choices] or None
        return value_in, value_out[0] if value_out and len(value_out) == 1 else value_out
    for key_in, key_out in _PAIRS:
        value_in, value_out = get(key_in), get(key_out)
        if key_in == "gcp.vertex.agent.llm_request":
            value_in = value_in if value_in and value_in != "{}" else get("gcp.vertex.agent.tool_call_args")
            value_out = (
                value_out if value_out and value_out != "{}" else get("gcp.vertex.agent.tool_response")
            )
        if value_in or value_out:
            return value_in, value_out
    if scope == "pydantic-ai" and (get("pydantic_ai.all_messages") or get("final_result")):
        return get("pydantic_ai.all_messages"), get("final_result")
    if get("tool_arguments") or get("tool_response"):
        return get("tool_arguments"), get("tool_response")
    for prefix_in, prefix_out in (
        ("gen_ai.prompt", "gen_ai.completion"),
        ("llm.input_messages", "llm.output_messages"),
    ):
        nested_in, nested_out = _nested(attrs, prefix_in), _nested(attrs, prefix_out)
        if nested_in is not None or nested_out is not None:
            return nested_in or {}, nested_out or {}
    for key_in, key_out in (
        ("gen_ai.input.messages", "gen_ai.output.messages"),
        ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"),
    ):
        if get(key_in) or get(key_out):
            return get(key_in), get(key_out)
    return None, None


def _attrs(obj: dict[str, Any]) -> dict[str, Any]:
    return {kv["key"]: _plain(any_value(kv["value"])) for kv in obj.get("attributes") or []}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _name(span_name: str, attrs: dict[str, Any]) -> str:
    """Langfuse's ``extractName``: the tool's name, Logfire's message, the Vercel AI SDK's tool name or
    its ``functionId:operationId``, else the span's own name (which it does not keep then)."""
    for key in ("gen_ai.tool.name", "logfire.msg"):
        if attrs.get(key):
            return attrs[key] if isinstance(attrs[key], str) else json.dumps(attrs[key])
    if "ai.toolCall.name" in attrs:
        return str(attrs["ai.toolCall.name"])
    if "ai.operationId" in attrs:
        function = attrs.get("ai.telemetry.functionId")
        return f"{function}:" * bool(function) + str(attrs["ai.operationId"])
    return span_name


def _iso(ns: int) -> str:
    """Langfuse keeps times to the millisecond."""
    when = dt.datetime.fromtimestamp(ns // 1_000_000 / 1000, dt.UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _counts(usage: dict[str, Any]) -> dict[str, int]:
    return {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}


def _text(value: Any) -> Any:
    return value if value is None or isinstance(value, str) else json.dumps(value)


def _type(attrs: dict[str, Any]) -> str:
    kind = attrs.get("langfuse.observation.type")
    if isinstance(kind, str):
        return kind.upper()
    operation = attrs.get("gen_ai.operation.name")
    if operation == "execute_tool" or attrs.get("openinference.span.kind") == "TOOL":
        return "TOOL"
    if (
        operation in ("chat", "generate_content", "text_completion")
        or attrs.get("openinference.span.kind") == "LLM"
    ):
        return "GENERATION"
    if operation == "invoke_agent" or attrs.get("openinference.span.kind") == "AGENT":
        return "AGENT"
    return "SPAN"


def observation(span: dict[str, Any], resource: dict[str, Any], scope: dict[str, Any]) -> dict[str, Any]:
    """One span as Langfuse's OpenTelemetry ingestion stores it, validated with ``ObservationV2``."""
    attrs = _attrs(span)
    scope_name = scope.get("name", "")
    value_in, value_out = ingested_io(attrs, scope_name, span.get("events") or [])
    status = span.get("status") or {}
    sdk = scope_name.startswith("langfuse-sdk")
    metadata: dict[str, Any] = {
        k.split(".", 3)[3]: v for k, v in attrs.items() if k.startswith("langfuse.trace.metadata.")
    }
    metadata["resourceAttributes"] = resource
    metadata["scope"] = {**scope, "attributes": _attrs(scope)}
    if not sdk:
        kept = {k: v for k, v in attrs.items() if k not in _IO_KEYS and not k.startswith(_IO_PREFIXES)}
        metadata["attributes"] = {k: v if isinstance(v, str) else json.dumps(v) for k, v in kept.items()}
    error = attrs.get("langfuse.observation.level") == "ERROR" or status.get("code") in (
        2,
        "STATUS_CODE_ERROR",
    )
    usage = attrs.get("langfuse.observation.usage_details")
    body = {
        **span_fields(span),
        "type": _type(attrs),
        "name": _name(span["name"], attrs),
        "level": "ERROR" if error else "DEFAULT",
        "statusMessage": attrs.get("langfuse.observation.status_message") or status.get("message") or None,
        "sessionId": attrs.get("langfuse.session.id") or attrs.get("session.id"),
        "input": _text(value_in),
        "output": _text(value_out),
        "metadata": metadata,
        "model": attrs.get("langfuse.observation.model.name") or attrs.get("gen_ai.response.model"),
        # Usage details are counts by name (``Dict[str, int]``): nested provider details are not kept.
        "usageDetails": _counts(json.loads(usage)) if isinstance(usage, str) else None,
    }
    return validated(body)


def span_fields(span: dict[str, Any]) -> dict[str, Any]:
    """What an observation takes from its span as it is: ids, parent, times (to the millisecond)."""
    return {
        "id": span["spanId"],
        "traceId": span["traceId"],
        "startTime": _iso(int(span["startTimeUnixNano"])),
        "endTime": _iso(int(span["endTimeUnixNano"])),
        "projectId": PROJECT,
        "parentObservationId": span.get("parentSpanId") or None,
        "isRootObservation": not span.get("parentSpanId"),
        "environment": "default",
    }


def validated(body: dict[str, Any]) -> dict[str, Any]:
    """An observation's body as the API answers it, validated with ``ObservationV2``."""
    return dict(jsonable_encoder(parse_obj_as(ObservationV2, body)))


Observe = Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], dict[str, Any]]


def each_span(doc: dict[str, Any], observe: Observe) -> list[dict[str, Any]]:
    """``observe(span, resource attributes, scope)`` of every span of an OTLP/JSON document."""
    out = []
    for group in doc["resourceSpans"]:
        kept = group.get("resource", {}).get("attributes", [])
        resource = {kv["key"]: _plain(any_value(kv["value"])) for kv in kept}
        for scoped in group.get("scopeSpans", []):
            for span in scoped.get("spans", []):
                out.append(observe(span, resource, scoped.get("scope") or {}))
    return out


def observations_from_otlp(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every span of an OTLP/JSON document as the observation Langfuse stores."""
    return each_span(doc, observation)


@dataclass
class ReadFaults:
    """Answers to the next reads instead of the data: (status, headers) each, in order; and trace ids
    whose observations always fail with ``failing_status`` (a failure in the middle of a backfill)."""

    answers: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    failing_traces: set[str] = field(default_factory=set)
    failing_status: int = 500


def _matches(row: dict[str, Any], condition: dict[str, Any]) -> bool:
    column, op, value = condition["column"], condition["operator"], condition.get("value")
    if column == "isRootObservation":
        return bool(row.get("isRootObservation")) == value
    if column == "startTime":
        start = dt.datetime.fromisoformat(row["startTime"].replace("Z", "+00:00"))
        bound = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        return start >= bound if op == ">=" else start < bound
    if column == "tags":
        return set(value) <= set(row.get("tags") or ())
    key = {"traceName": "name"}.get(column, column)
    return bool(row.get(key) == value)


class ObservationStore:
    """The observations the server answers with, and the read requests it was sent."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: list[dict[str, Any]] = []
        self.faults = ReadFaults()
        self.queries: list[dict[str, str]] = []

    def add(self, rows: list[dict[str, Any]]) -> None:
        with self.lock:
            self.rows.extend(rows)

    def answer(self, query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        """(status, body, headers) for one ``GET /api/public/v2/observations``."""
        with self.lock:
            self.queries.append(query)
            if self.faults.answers:
                status, headers = self.faults.answers.pop(0)
                return status, {"message": "injected failure"}, headers
            if query.get("traceId") in self.faults.failing_traces:
                return self.faults.failing_status, {"message": "injected failure"}, {}
            rows = list(self.rows)
        if "traceId" in query:
            rows = [r for r in rows if r["traceId"] == query["traceId"]]
        for condition in json.loads(query.get("filter", "[]")):
            rows = [r for r in rows if _matches(r, condition)]
        start = int(base64.b64decode(query["cursor"])) if query.get("cursor") else 0
        limit = int(query.get("limit", 50))
        page = rows[start : start + limit]
        more = start + limit < len(rows)
        meta = {"cursor": base64.b64encode(str(start + limit).encode()).decode()} if more else {}
        response = parse_obj_as(ObservationsV2Response, {"data": page, "meta": meta})
        return 200, jsonable_encoder(response), {}
