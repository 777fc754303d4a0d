"""An OTLP/HTTP logs receiver on 127.0.0.1 for tests: decodes every ``POST /v1/logs`` body as an
``ExportLogsServiceRequest`` with ``opentelemetry-proto`` (gzip too) and keeps the log records, so a
test sees exactly what a backend would. A body that does not decode is a 400 and fails the test."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass(slots=True, frozen=True)
class ReceivedEvent:
    """One received log record: ids in hex, attributes as Python values, and its resource's."""

    event_name: str
    trace_id: str
    span_id: str
    attributes: dict[str, Any]
    resource: dict[str, Any]


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def decode(body: bytes) -> list[ReceivedEvent]:
    request = ExportLogsServiceRequest()
    request.ParseFromString(body)
    events = []
    for resource_logs in request.resource_logs:
        resource = {kv.key: value_of(kv.value) for kv in resource_logs.resource.attributes}
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                events.append(
                    ReceivedEvent(
                        event_name=record.event_name,
                        trace_id=record.trace_id.hex(),
                        span_id=record.span_id.hex(),
                        attributes={kv.key: value_of(kv.value) for kv in record.attributes},
                        resource=resource,
                    )
                )
    return events


class LogsReceiver:
    def __init__(self) -> None:
        self.events: list[ReceivedEvent] = []
        self.requests = 0
        self.errors: list[str] = []
        self._cond = threading.Condition()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                try:
                    if self.path != "/v1/logs":
                        raise ValueError(f"POST {self.path}: not /v1/logs")
                    if self.headers.get("Content-Type") != "application/x-protobuf":
                        raise ValueError(f"content type {self.headers.get('Content-Type')}")
                    events = decode(body)
                except (DecodeError, ValueError) as exc:
                    with receiver._cond:
                        receiver.errors.append(str(exc))
                    self.send_response(400)
                    self.end_headers()
                    return
                # Kept before the reply: an exporter that got its 200 finds its records here.
                with receiver._cond:
                    receiver.requests += 1
                    receiver.events.extend(events)
                    receiver._cond.notify_all()
                reply = ExportLogsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        return Handler

    def wait_for(self, count: int, timeout: float = 30.0) -> list[ReceivedEvent]:
        """The events once at least ``count`` arrived (an AssertionError after ``timeout``)."""
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.events) >= count, timeout), (
                f"{len(self.events)} events received, expected {count}"
            )
            return list(self.events)


@contextmanager
def logs_receiver() -> Iterator[LogsReceiver]:
    receiver = LogsReceiver()
    thread = threading.Thread(target=receiver.server.serve_forever, name="logs-receiver", daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()
        thread.join()
        assert not receiver.errors, receiver.errors
