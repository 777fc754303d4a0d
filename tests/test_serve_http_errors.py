"""OTLP/HTTP error replies a client can read: in the request's encoding when it is OTLP's, else in
the encoding ``Accept`` names, else plain text."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from google.rpc import code_pb2, status_pb2

from otel_traj.pipeline import Pipeline
from otel_traj.serve.http_receiver import OtlpHttpApp
from otel_traj.serve.ingest import Ingest


@pytest.fixture
def app() -> Iterator[OtlpHttpApp]:
    pipeline = Pipeline()
    http_app = OtlpHttpApp(Ingest(pipeline))
    yield http_app
    http_app.close()
    pipeline.shutdown()


def call(
    app: OtlpHttpApp, headers: dict[str, str], method: str = "POST", path: str = "/v1/traces"
) -> tuple[int, dict[str, str], bytes]:
    """``(status, headers, body)`` of one request with body ``x``."""
    sent: list[dict[str, Any]] = []
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"x", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(dict(message))

    asyncio.run(app(scope, receive, send))
    start, body = sent
    reply_headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], reply_headers, body["body"]


def test_an_unsupported_content_type_is_answered_in_plain_text(app: OtlpHttpApp) -> None:
    status, headers, body = call(app, {"Content-Type": "text/plain"})
    assert status == 415
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert body.decode() == (
        "unsupported content type 'text/plain': send application/x-protobuf or application/json\n"
    )
    assert int(headers["content-length"]) == len(body)


def test_without_a_content_type_the_reply_is_plain_text(app: OtlpHttpApp) -> None:
    status, headers, body = call(app, {}, method="GET")
    assert status == 405
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert body == b"only POST is supported\n"


def test_accept_chooses_the_encoding_of_an_unsupported_request(app: OtlpHttpApp) -> None:
    status, headers, body = call(app, {"Content-Type": "text/plain", "Accept": "text/html, application/json"})
    assert (status, headers["content-type"]) == (415, "application/json")
    assert json.loads(body)["message"].startswith("unsupported content type 'text/plain'")
    status, headers, body = call(app, {"Content-Type": "text/plain", "Accept": "application/x-protobuf"})
    assert (status, headers["content-type"]) == (415, "application/x-protobuf")
    assert status_pb2.Status.FromString(body).code == code_pb2.INVALID_ARGUMENT


def test_otlp_requests_are_answered_in_their_own_encoding(app: OtlpHttpApp) -> None:
    headers = {
        "Content-Type": "application/json",
        "Content-Encoding": "br",
        "Accept": "application/x-protobuf",
    }
    status, reply, body = call(app, headers)
    assert (status, reply["content-type"]) == (415, "application/json")
    assert json.loads(body)["message"] == "unsupported content encoding 'br'"
    status, reply, body = call(app, {"Content-Type": "application/x-protobuf"}, path="/v1/logs")
    assert (status, reply["content-type"]) == (404, "application/x-protobuf")
    assert status_pb2.Status.FromString(body).code == code_pb2.NOT_FOUND
