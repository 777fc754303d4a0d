"""Hostile input at the boundary: text that cannot be encoded, values too large to keep, and JSON that
Python's decoder refuses. Each is made harmless where spans are read, so no sink, scrape or report
fails on it later and no payload is answered as if otel-traj had failed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2

from otel_traj.adapters import TraceFileError, read_trace_file
from otel_traj.config import AssemblerConfig
from otel_traj.serve import ServeSettings, Service
from tests.serve_helpers import FIXTURES, POLICY, post

DEEP = b'{"resourceSpans": ' + b"[" * 3000 + b"]" * 3000 + b"}"
SPAN_START = b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": '
LONG_INTEGER = SPAN_START + b"7" * 5000 + b"}]}]}]}"


@pytest.fixture
def http_url(tmp_path: Path) -> Iterator[str]:
    settings = ServeSettings(
        host="127.0.0.1",
        grpc_port=0,
        http_port=0,
        metrics_port=0,
        policy=str(POLICY),
        store=str(tmp_path / "verdicts.db"),
        auth_token=None,
        assembler=AssemblerConfig(grace_s=0.0),
    )
    service = Service(settings)
    try:
        ports = service.start()
        yield f"http://127.0.0.1:{ports.http}/v1/traces"
    finally:
        service.stop()


@pytest.mark.parametrize(
    ("body", "reason"),
    [(DEEP, "nested too deeply"), (LONG_INTEGER, "Exceeds the limit")],
    ids=["nested-3000-deep", "5000-digit-integer"],
)
def test_json_the_decoder_refuses_is_an_invalid_request_and_the_service_goes_on(
    http_url: str, body: bytes, reason: str
) -> None:
    status_code, headers, reply = post(http_url, body, "application/json")
    assert status_code == 400
    assert headers["content-type"] == "application/json"
    status = status_pb2.Status()
    json_format.Parse(reply, status)
    assert status.code == code_pb2.INVALID_ARGUMENT
    assert status.message.startswith("invalid JSON: ") and reason in status.message
    # The next request is served as usual.
    run = (FIXTURES / "pydantic_ai" / "clean.otlp.pb").read_bytes()
    assert post(http_url, run)[0] == 200


def test_a_trace_file_holding_an_integer_too_long_to_convert_is_named_with_the_reason(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hostile.json"
    path.write_bytes(LONG_INTEGER)
    with pytest.raises(TraceFileError) as raised:
        read_trace_file(path)
    assert str(path) in str(raised.value) and "invalid JSON: Exceeds the limit" in str(raised.value)
