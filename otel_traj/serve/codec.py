"""OTLP payloads in and out: request bodies to SpanBatches, responses and error statuses to bytes."""

from __future__ import annotations

import json
import zlib
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from otel_traj.adapters import zstd
from otel_traj.adapters.batch import SpanBatch
from otel_traj.adapters.otlp_json import views_from_otlp_json
from otel_traj.adapters.otlp_proto import parse_request, views_from_request
from otel_traj.serve.ingest import Accepted, InvalidRequest

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# zlib's wbits: 16 + MAX_WBITS reads the gzip container, MAX_WBITS the zlib one ("deflate" in HTTP).
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
ENCODINGS = ("identity", *_WBITS, "zstd")


class TooLarge(ValueError):
    """The body (after decompression) exceeds the configured limit."""


def decompress(body: bytes, encoding: str, limit: int) -> bytes:
    """Inflate ``body`` without ever holding more than ``limit`` bytes (a small gzip can expand to
    gigabytes). Raises :class:`TooLarge` or :class:`InvalidRequest`."""
    if encoding == "identity":
        if len(body) > limit:
            raise TooLarge(f"request body of {len(body)} bytes exceeds the limit of {limit}")
        return body
    if encoding == "zstd":
        return _unzstd(body, limit)
    inflater = zlib.decompressobj(_WBITS[encoding])
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise InvalidRequest(f"invalid {encoding} body: {exc}") from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise TooLarge(f"decompressed request body exceeds the limit of {limit} bytes")
    if not inflater.eof:
        raise InvalidRequest(f"truncated {encoding} body")
    return data


def _unzstd(body: bytes, limit: int) -> bytes:
    try:
        return zstd.decompress(body, limit)
    except zstd.ZstdTooLarge:
        raise TooLarge(f"decompressed request body exceeds the limit of {limit} bytes") from None
    except zstd.ZstdDataError as exc:
        raise InvalidRequest(f"invalid zstd body: {exc}") from None


def decode_protobuf(data: bytes) -> SpanBatch:
    try:
        request = parse_request(data)
    except DecodeError as exc:
        raise InvalidRequest(f"not an ExportTraceServiceRequest: {exc}") from None
    return views_from_request(request)


def load_json(data: bytes) -> Any:
    """A request body's JSON document; :class:`InvalidRequest` when it is not JSON."""
    try:
        return json.loads(data)
    except RecursionError:
        raise InvalidRequest("invalid JSON: nested too deeply") from None
    except ValueError as exc:
        # Besides syntax and encoding errors: an integer longer than Python converts from a string
        # (``sys.get_int_max_str_digits``) is the sender's mistake too, not the receiver's.
        raise InvalidRequest(f"invalid JSON: {exc}") from None


def decode_json(data: bytes) -> SpanBatch:
    doc = load_json(data)
    if doc == {}:
        return SpanBatch()
    try:
        return views_from_otlp_json(doc)
    except (ValueError, RecursionError) as exc:
        raise InvalidRequest(str(exc)) from None


def response(accepted: Accepted) -> ExportTraceServiceResponse:
    message = ExportTraceServiceResponse()
    if accepted.rejected:
        message.partial_success.rejected_spans = accepted.rejected
        message.partial_success.error_message = accepted.message
    return message


def encode(message: Message, content_type: str) -> bytes:
    """A response message in the request's encoding: OTLP/JSON or binary protobuf."""
    if content_type == JSON:
        return json.dumps(json_format.MessageToDict(message)).encode()
    return bytes(message.SerializeToString())


def response_body(accepted: Accepted, content_type: str) -> bytes:
    return encode(response(accepted), content_type)


def status_body(code: int, text: str, content_type: str) -> bytes:
    """A ``google.rpc.Status`` body, as OTLP/HTTP requires for errors, in the request's encoding."""
    return encode(status_pb2.Status(code=code, message=text), content_type)
