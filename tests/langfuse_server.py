"""A Langfuse-compatible server on 127.0.0.1 for tests: the endpoints the sink and an OTel exporter call.

Every score body is validated with the ``langfuse`` package's own generated models, strictly (unknown
or missing fields are a 400), plus the server's own rules (exactly one subject, BOOLEAN is 0/1, ...),
so a wire-format mistake fails a test. Scores are stored by id, so a re-sent score overwrites like on
the real server. Faults are switched on per test: failures with a status (and ``Retry-After``), a
permanent 400, slow responses, 207 partial rejection, and older server versions.
"""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import json
import math
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlparse

from langfuse.api.scores.types.create_score_batch_results import CreateScoreBatchResults
from langfuse.api.scores.types.create_score_request import CreateScoreRequest
from langfuse.api.scores.types.score_body import ScoreBody
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.langfuse_reads import OBSERVATIONS_PATH, ObservationStore
from tests.langfuse_wire import Faults, Invalid, RequestRecord, StoredSpan, check_score

Version = Literal["v5", "v4-single", "v3"]
"""``v5``: list form (202/207); ``v4-single``: one object per POST, a list is a 400; ``v3``: no
``/api/public/scores`` POST at all (404), only ``/api/public/ingestion``."""

_ENVELOPE_KEYS = {"id", "timestamp", "type", "body", "metadata"}


def free_port() -> int:
    """A loopback port nobody listens on: a server that is down refuses connections on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LangfuseTestServer:
    def __init__(
        self,
        public_key: str = "pk-lf-test",
        secret_key: str = "sk-lf-test",
        port: int = 0,
        version: Version = "v5",
    ) -> None:
        self.public_key = public_key
        self.secret_key = secret_key
        self.version: Version = version
        self.faults = Faults()
        self.lock = threading.Lock()
        self.stored = threading.Condition(self.lock)
        self.held = 0
        self.scores: dict[str, dict[str, Any]] = {}
        self.score_writes = 0
        self.spans: list[StoredSpan] = []
        self.otlp_bodies: list[bytes] = []
        self.requests: list[RequestRecord] = []
        self.reads = ObservationStore()
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._httpd.server_address[1] if self._httpd is not None else self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def auth_header(self) -> str:
        token = base64.b64encode(f"{self.public_key}:{self.secret_key}".encode()).decode()
        return f"Basic {token}"

    def start(self) -> LangfuseTestServer:
        handler = type("Handler", (_Handler,), {"app": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        self._httpd.daemon_threads = True
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @contextmanager
    def running(self) -> Iterator[LangfuseTestServer]:
        self.start()
        try:
            yield self
        finally:
            self.stop()

    # -- queries for assertions --------------------------------------------------------------------

    def scores_for(self, trace_id: str) -> list[dict[str, Any]]:
        with self.lock:
            return [s for s in self.scores.values() if s.get("traceId") == trace_id]

    def wait_for_scores(self, count: int, timeout: float) -> bool:
        """Block until at least ``count`` scores are stored (woken by each store, no polling)."""
        with self.stored:
            return self.stored.wait_for(lambda: len(self.scores) >= count, timeout)

    def wait_for_requests(self, path: str, count: int, timeout: float) -> bool:
        """Block until ``count`` POSTs to ``path`` have been answered (or are being answered)."""
        with self.stored:
            return self.stored.wait_for(
                lambda: sum(r.method == "POST" and r.path == path for r in self.requests) >= count, timeout
            )

    def wait_for_held(self, count: int, timeout: float) -> bool:
        """Block until ``count`` requests are being held at the gate."""
        with self.stored:
            return self.stored.wait_for(lambda: self.held >= count, timeout)

    def span_ids(self) -> set[tuple[str, str]]:
        with self.lock:
            return {(s.trace_id, s.span_id) for s in self.spans}

    def posts(self, path: str) -> list[RequestRecord]:
        with self.lock:
            return [r for r in self.requests if r.method == "POST" and r.path == path]

    # -- fault decisions ---------------------------------------------------------------------------

    def injected_failure(self) -> tuple[int, dict[str, str], str] | None:
        with self.lock:
            f = self.faults
            if f.fail_times > 0:
                f.fail_times -= 1
                headers = {"Retry-After": f.retry_after} if f.retry_after is not None else {}
                return f.fail_status, headers, "injected failure"
            if f.reject_status is not None:
                return f.reject_status, {}, f.reject_message
        return None

    def partial_rejection(self, name: str) -> int | None:
        with self.lock:
            rule = self.faults.partial.get(name)
            if rule is None or rule[1] == 0:
                return None
            if rule[1] > 0:
                rule[1] -= 1
            return rule[0]

    def store(self, score: dict[str, Any]) -> None:
        with self.lock:
            now = dt.datetime.now(dt.UTC).isoformat()
            previous = self.scores.get(score["id"])
            score["createdAt"] = previous["createdAt"] if previous else now
            score["updatedAt"] = now
            self.scores[score["id"]] = score
            self.score_writes += 1
            self.stored.notify_all()


class _Handler(BaseHTTPRequestHandler):
    app: LangfuseTestServer
    protocol_version = "HTTP/1.1"
    # One write per response: headers and body in separate segments meet delayed ACKs (~40 ms each).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None, scores: int = 0) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        ctype = "application/x-protobuf" if isinstance(body, bytes) else "application/json"
        # Recorded before replying: once the client has the answer, the record must be visible.
        with self.app.lock:
            self.app.requests.append(RequestRecord(self.command, urlparse(self.path).path, status, scores))
            self.app.stored.notify_all()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)

    def _read(self) -> bytes:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        return gzip.decompress(raw) if self.headers.get("Content-Encoding") == "gzip" else raw

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") == self.app.auth_header:
            return True
        self._reply(401, {"message": "Invalid credentials. Confirm that you've configured the correct host."})
        return False

    def _prologue(self) -> bool:
        with self.app.lock:
            delay, gate = self.app.faults.delay, self.app.faults.gate
            if gate is not None:
                self.app.held += 1
                self.app.stored.notify_all()
        if delay:
            time.sleep(delay)
        if gate is not None:
            gate.wait()
            with self.app.lock:
                self.app.held -= 1
        return self._authorized()

    def do_GET(self) -> None:
        if not self._prologue():
            return
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == OBSERVATIONS_PATH:
            self._reply(*self.app.reads.answer(query))
            return
        if url.path != "/api/public/scores":
            self._reply(404, {"message": "not found"})
            return
        page, limit = int(query.get("page", 1)), int(query.get("limit", 50))
        with self.app.lock:
            rows = [
                s
                for s in self.app.scores.values()
                if all(s.get(k) == query[k] for k in ("traceId", "observationId", "name") if k in query)
            ]
        rows.sort(key=lambda s: (s.get("timestamp", ""), s["id"]))
        data = [_public_score(s) for s in rows[(page - 1) * limit : page * limit]]
        meta = {
            "page": page,
            "limit": limit,
            "totalItems": len(rows),
            "totalPages": math.ceil(len(rows) / limit),
        }
        self._reply(200, {"data": data, "meta": meta})

    def do_POST(self) -> None:
        if not self._prologue():
            return
        path = urlparse(self.path).path
        body = self._read()
        if path == "/api/public/otel/v1/traces":
            self._otlp(body)
            return
        if path not in ("/api/public/scores", "/api/public/ingestion") or (
            path == "/api/public/scores" and self.app.version == "v3"
        ):
            self._reply(404, {"message": f"{path} not found"})
            return
        failure = self.app.injected_failure()
        if failure is not None:
            status, headers, message = failure
            self._reply(status, {"message": message, "error": message}, headers)
            return
        try:
            payload = json.loads(body)
        except ValueError:
            self._reply(400, {"message": "Invalid JSON"})
            return
        if path == "/api/public/ingestion":
            self._ingestion(payload)
        elif isinstance(payload, list):
            self._score_list(payload)
        else:
            self._score_single(payload)

    def _score_single(self, payload: Any) -> None:
        try:
            score = check_score(CreateScoreRequest, payload, with_timestamp=True)
        except Invalid as exc:
            self._reply(400, {"message": "Invalid request data", "error": str(exc)})
            return
        self.app.store(score)
        self._reply(200, {"id": score["id"]}, scores=1)

    def _score_list(self, payload: list[Any]) -> None:
        if self.app.version != "v5":
            self._reply(400, {"message": "Invalid request data", "error": "Expected object, received array"})
            return
        try:
            scores = [check_score(CreateScoreRequest, item, with_timestamp=True) for item in payload]
        except Invalid as exc:
            self._reply(400, {"message": "Invalid request data", "error": str(exc)})
            return
        errors = []
        for score in scores:
            status = self.app.partial_rejection(score["name"])
            if status is None:
                self.app.store(score)
            else:
                errors.append(
                    {"message": f"score {score['name']} rejected", "id": score["id"], "status": status}
                )
        if errors:
            accepted = len(scores) - len(errors)
            reply = {"accepted": accepted, "rejected": len(errors), "errors": errors}
            # The shape the package documents for 207, so the sink's parsing is tested against it.
            CreateScoreBatchResults.model_validate(reply)
            self._reply(207, reply, scores=accepted)
        else:
            self._reply(202, {"message": "Accepted"}, scores=len(scores))

    def _ingestion(self, payload: Any) -> None:
        if not isinstance(payload, dict) or not isinstance(payload.get("batch"), list):
            self._reply(400, {"message": "Invalid request data", "error": "batch must be a list"})
            return
        successes, errors = [], []
        for event in payload["batch"]:
            event_id = str(event.get("id")) if isinstance(event, dict) else "?"
            try:
                if not isinstance(event, dict) or set(event) - _ENVELOPE_KEYS or "body" not in event:
                    raise Invalid(
                        f"invalid event envelope {sorted(event) if isinstance(event, dict) else event}"
                    )
                if event.get("type") != "score-create":
                    raise Invalid(f"unsupported event type {event.get('type')!r}")
                dt.datetime.fromisoformat(str(event["timestamp"]))
                score = check_score(ScoreBody, event["body"], with_timestamp=False)
            except (Invalid, ValueError, KeyError) as exc:
                errors.append(
                    {"id": event_id, "status": 400, "message": "Invalid request data", "error": str(exc)}
                )
                continue
            status = self.app.partial_rejection(score["name"])
            if status is not None:
                errors.append({"id": event_id, "status": status, "message": "rejected"})
                continue
            score["timestamp"] = event["timestamp"]
            self.app.store(score)
            successes.append({"id": event_id, "status": 201})
        self._reply(207, {"successes": successes, "errors": errors}, scores=len(successes))

    def _otlp(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except Exception:
            self._reply(400, {"message": "invalid OTLP protobuf"})
            return
        spans = [
            StoredSpan(
                trace_id=span.trace_id.hex(),
                span_id=span.span_id.hex(),
                parent_id=span.parent_span_id.hex() or None,
                name=span.name,
            )
            for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]
        with self.app.lock:
            self.app.spans.extend(spans)
            self.app.otlp_bodies.append(body)
        self._reply(200, ExportTraceServiceResponse().SerializeToString())


def _public_score(score: dict[str, Any]) -> dict[str, Any]:
    """The read shape of the public API: numeric ``value``; categorical values in ``stringValue``."""
    out = {k: v for k, v in score.items() if k != "value"}
    out["source"] = "API"
    if score["dataType"] == "CATEGORICAL":
        out["stringValue"] = score["value"]
    else:
        out["value"] = score["value"]
        if score["dataType"] == "BOOLEAN":
            out["stringValue"] = "True" if score["value"] == 1 else "False"
    return out
