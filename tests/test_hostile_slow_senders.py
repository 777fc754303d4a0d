"""``otel-traj serve`` against senders that start a request and never finish it, and against one
request larger than everything the service holds.

Each test runs a real service in this process on real sockets, so that it can see what the
receivers hold (requests still arriving, decoding slots) and wait until a flood is in place; the
good exporters' runs are read from the store once the service has stopped.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from otel_traj.config import AssemblerConfig
from otel_traj.serve import Ports, Service
from otel_traj.sinks.store import connect, read_verdicts
from tests.semconv_agent import emit
from tests.serve_helpers import EXPORT, local_settings, post, provider, refund_for, wait_for

TOKEN = "t0ken"
HEAD = (
    b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000\r\n"
)


class Running:
    """A service in this process, its ports, and runs exported to it by good exporters."""

    def __init__(self, tmp_path: Path, **settings: Any) -> None:
        self.store = tmp_path / "verdicts.db"
        self.service = Service(dataclasses.replace(local_settings(tmp_path), **settings))
        self.ports: Ports = self.service.start()
        self.sent: set[str] = set()
        self._provider, self._memory = provider("agent")
        self._lock = threading.Lock()

    def run(self) -> bytes:
        """A new graded-refund run's spans as one OTLP request (its trace id remembered as sent)."""
        with self._lock:
            trace_id = emit(self._provider.get_tracer("agent"), refund_for("C023"))
            body: bytes = encode_spans(self._memory.get_finished_spans()).SerializeToString()
            self._memory.clear()
            self.sent.add(f"{trace_id:032x}")
        return body

    def post(self, body: bytes, headers: dict[str, str] | None = None) -> int:
        return post(f"http://127.0.0.1:{self.ports.http}/v1/traces", body, headers=headers)[0]

    def export(self, body: bytes, metadata: tuple[tuple[str, str], ...] = ()) -> ExportTraceServiceResponse:
        with grpc.insecure_channel(f"127.0.0.1:{self.ports.grpc}") as channel:
            call = channel.unary_unary(
                EXPORT, request_serializer=None, response_deserializer=ExportTraceServiceResponse.FromString
            )
            return call(body, metadata=metadata, timeout=10)

    def results(self) -> dict[tuple[str, str], int]:
        return self.service.ingest.stats.snapshot()[0]

    def stop_and_read(self) -> set[str]:
        """Stop the service (it grades what it holds), then the trace ids of the stored verdicts."""
        self.service.stop()
        conn = connect(self.store, readonly=True)
        try:
            return {verdict["trace_id"] for verdict in read_verdicts(conn)}
        finally:
            conn.close()


@pytest.fixture
def running(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Running]:
    service = Running(tmp_path, **getattr(request, "param", {}))
    try:
        yield service
    finally:
        service.service.stop()


def heads_without_body(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that sent a complete ``POST /v1/traces`` head announcing a body, and no body."""
    socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(count)]
    for sock in socks:
        sock.sendall(HEAD + b"\r\n")
    return socks


def answer(sock: socket.socket) -> bytes:
    """Everything the server sends on ``sock`` until it closes it (at most the socket's timeout)."""
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
            return int(reply.status), reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.mark.parametrize("running", [{"body_timeout_s": 600.0, "max_arriving": 2048}], indirect=True)
def test_exporters_are_graded_while_1024_requests_wait_for_a_body_that_never_comes(running: Running) -> None:
    arrivals = running.service._http_app.body.arrivals  # type: ignore[union-attr]
    slow = heads_without_body(running.ports.http, 1024)
    try:
        wait_for(lambda: len(arrivals) == 1024, what="1,024 requests waiting for their bodies")
        statuses = [running.post(running.run()) for _ in range(20)]
        assert statuses == [200] * 20
        assert get(running.ports.metrics, "/healthz")[0] == 200
        assert get(running.ports.metrics, "/readyz")[0] == 200
        assert len(arrivals) == 1024  # all still held while the exporters were served
    finally:
        for sock in slow:
            sock.close()
    assert running.stop_and_read() >= running.sent


@pytest.mark.parametrize("running", [{"body_timeout_s": 600.0, "max_arriving": 8}], indirect=True)
def test_a_request_that_finds_every_arriving_place_taken_cuts_the_one_waiting_longest(
    running: Running,
) -> None:
    arrivals = running.service._http_app.body.arrivals  # type: ignore[union-attr]
    first = heads_without_body(running.ports.http, 1)
    wait_for(lambda: len(arrivals) == 1, what="the first request waiting")
    others = heads_without_body(running.ports.http, 7)
    try:
        wait_for(lambda: len(arrivals) == 8, what="eight requests waiting")
        assert running.post(running.run()) == 200
        cut = answer(first[0])
        assert cut.startswith(b"HTTP/1.1 503")
        assert b"retry-after: 1" in cut.lower()
        statuses = [running.post(running.run()) for _ in range(10)]
        assert statuses == [200] * 10
        assert len(arrivals) == 7  # the others still wait; the place the cut one left serves the rest
    finally:
        for sock in first + others:
            sock.close()
    assert running.results()[("http", "body_evicted")] == 1
    assert running.stop_and_read() >= running.sent


@pytest.mark.parametrize("running", [{"body_timeout_s": 0.3, "min_body_rate": 0}], indirect=True)
def test_a_body_that_stops_arriving_is_answered_408_and_its_connection_closed(running: Running) -> None:
    (sock,) = heads_without_body(running.ports.http, 1)
    sock.sendall(b"\x0a" * 10)  # ten of the thousand bytes announced
    try:
        reply = answer(sock)
    finally:
        sock.close()
    assert reply.startswith(b"HTTP/1.1 408")
    assert b"connection: close" in reply.lower()
    assert b"did not arrive in time" in reply
    assert running.results() == {("http", "body_timeout"): 1}


@pytest.mark.parametrize("running", [{"body_timeout_s": 0.3, "min_body_rate": 65_536}], indirect=True)
def test_a_body_arriving_at_the_minimum_rate_goes_on_past_the_timeout(running: Running) -> None:
    chunk = 65_536
    sock = socket.create_connection(("127.0.0.1", running.ports.http), timeout=30)
    head = HEAD.replace(b"1000", str(5 * chunk).encode())
    try:
        sock.sendall(head + b"\r\n")
        for _ in range(5):
            # The sender's pace, not a wait for the server: each chunk earns the body one more second,
            # and five of them take 1 s, past the 0.3 s timeout.
            time.sleep(0.2)
            sock.sendall(b"\xff" * chunk)
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += sock.recv(4096)
    finally:
        sock.close()
    assert reply.startswith(b"HTTP/1.1 400")  # all of it read, and then found not to be OTLP
    assert running.results() == {("http", "invalid"): 1}


def slow_calls(
    port: int, count: int, metadata: tuple[tuple[str, str], ...] = ()
) -> tuple[grpc.Channel, list[grpc.Future], threading.Event]:
    """``count`` ``Export`` calls whose headers are sent and whose message never is (until the event)."""
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    never = threading.Event()

    def no_message() -> Iterator[bytes]:
        never.wait()
        return
        yield b""

    export = channel.stream_unary(EXPORT, request_serializer=None, response_deserializer=None)
    return channel, [export.future(no_message(), metadata=metadata) for _ in range(count)], never


@pytest.mark.parametrize("running", [{"body_timeout_s": 600.0, "auth_token": TOKEN}], indirect=True)
def test_grpc_calls_that_never_send_their_message_hold_no_place_good_exporters_need(
    running: Running,
) -> None:
    receiver = running.service._grpc
    assert receiver is not None
    bearer = (("authorization", f"Bearer {TOKEN}"),)
    anonymous, refused, release_anonymous = slow_calls(running.ports.grpc, 32)
    channel, waiting, release = slow_calls(running.ports.grpc, 64, bearer)
    try:
        # Without the token: refused at the headers, without waiting for the message.
        assert {call.exception().code() for call in refused} == {grpc.StatusCode.UNAUTHENTICATED}
        wait_for(lambda: len(receiver.arrivals) == 64, what="64 calls waiting for their message")
        for _ in range(20):
            assert not running.export(running.run(), bearer).HasField("partial_success")
        assert running.post(running.run(), {"Authorization": f"Bearer {TOKEN}"}) == 200
        assert get(running.ports.metrics, "/readyz")[0] == 200
        assert len(receiver.arrivals) == 64
    finally:
        release.set()
        release_anonymous.set()
        for call in waiting:
            call.cancel()
        channel.close()
        anonymous.close()
    assert running.results()[("grpc", "unauthorized")] == 32
    assert running.results()[("grpc", "ok")] == 20
    assert running.stop_and_read() >= running.sent


@pytest.mark.parametrize("running", [{"body_timeout_s": 0.3, "max_arriving": 4}], indirect=True)
def test_grpc_calls_are_cut_when_their_message_is_late_or_newer_calls_need_the_place(
    running: Running,
) -> None:
    channel, late, release = slow_calls(running.ports.grpc, 6)
    try:
        codes = [call.exception().code() for call in late]
    finally:
        release.set()
        channel.close()
    assert codes == [grpc.StatusCode.CANCELLED] * 6
    results = running.results()
    assert results[("grpc", "body_timeout")] + results[("grpc", "body_evicted")] == 6
    assert results[("grpc", "body_evicted")] >= 2
    assert not running.export(running.run()).HasField("partial_success")


@pytest.mark.parametrize("running", [{"body_timeout_s": 0.2, "grpc_workers": 1}], indirect=True)
def test_readyz_is_503_while_every_decoding_slot_is_held_past_the_deadline(running: Running) -> None:
    ingest = running.service.ingest
    accept = ingest.accept
    wedged, entered = threading.Event(), threading.Semaphore(0)

    def stuck(batch: Any) -> Any:
        entered.release()
        wedged.wait()
        return accept(batch)

    ingest.accept = stuck  # type: ignore[method-assign]
    calls: list[Callable[[], object]] = [lambda: running.export(running.run())]
    calls += [lambda: running.post(running.run()) for _ in range(4)]  # the HTTP pool's four threads
    threads = [threading.Thread(target=call) for call in calls]
    for thread in threads:
        thread.start()
    for _ in threads:
        assert entered.acquire(timeout=30)
    try:
        starved = (503, "starved: every decoding slot held past the body timeout (grpc, http)\n")
        wait_for(lambda: get(running.ports.metrics, "/readyz") == starved, what="/readyz 503")
        assert get(running.ports.metrics, "/healthz")[0] == 200
    finally:
        wedged.set()
        for thread in threads:
            thread.join()
    assert get(running.ports.metrics, "/readyz") == (200, "ready\n")
    metrics = get(running.ports.metrics, "/metrics")[1]
    assert 'otel_traj_receiver_starved_total{transport="grpc"} 1.0' in metrics
    assert 'otel_traj_receiver_starved_total{transport="http"} 1.0' in metrics
    assert running.stop_and_read() >= running.sent


def many_traces(count: int) -> bytes:
    spans = [
        # A child whose root has not come: each trace stays open (in flight) until its TTL.
        Span(
            trace_id=i.to_bytes(16, "big"),
            span_id=i.to_bytes(8, "big"),
            parent_span_id=b"\x01" * 8,
            name="step",
            start_time_unix_nano=1,
            end_time_unix_nano=2,
        )
        for i in range(1, count + 1)
    ]
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])
    return request.SerializeToString()


@pytest.mark.parametrize(
    "running", [{"assembler": AssemblerConfig(grace_s=0.0, max_traces=100)}], indirect=True
)
def test_a_request_holding_more_traces_than_max_traces_is_refused_as_never_fitting(running: Running) -> None:
    too_many = many_traces(101)
    status, _, body = post(f"http://127.0.0.1:{running.ports.http}/v1/traces", too_many)
    assert status == 413
    assert b"the request holds 101 traces and the receiver holds at most 100 (max_traces)" in body
    with pytest.raises(grpc.RpcError) as refused:
        running.export(too_many)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert running.service.pipeline.assembler.in_flight == 0
    assert running.post(many_traces(100)) == 200
    assert running.service.pipeline.assembler.in_flight == 100
    status, headers, _ = post(f"http://127.0.0.1:{running.ports.http}/v1/traces", many_traces(101))
    assert (status, "Retry-After" in headers) == (413, False)  # full or not, it never fits
    assert running.results()[("http", "too_many_traces")] == 2
    assert running.results()[("grpc", "too_many_traces")] == 1
