"""OTLP/HTTP: ``POST /v1/traces`` and ``POST /v1/logs`` as an ASGI application (served by uvicorn).

Protobuf (``application/x-protobuf``) and JSON (``application/json``) bodies, gzip or deflate.
Errors follow the OTLP/HTTP spec: a ``google.rpc.Status`` body in the request's encoding, 400 for
payloads that cannot be decoded, 401 without the bearer token, 413 over the size limit, 415 for
other media types, and 503 with ``Retry-After`` when the receiver is over capacity (retryable). A
request in neither encoding (a 415, a browser's GET) is answered in the encoding its ``Accept``
header names, else in plain text: a protobuf body would be unreadable to the client that sent it.
Decoding and admission run on a thread pool so the event loop keeps accepting connections. Both
paths take the same encodings, compression, size limit and bearer token; each counts its own requests.

A body is awaited apart from the requests being decoded (:mod:`otel_traj.serve.http_body`): one that
does not arrive in time is answered 408, one cut to make room for newer requests 503, and both close
the connection (its unread bytes cannot be told from the next request). At most ``max_decoding``
requests whose body is complete wait for or hold the pool, beyond them 503; the pool's threads are
the :class:`~otel_traj.serve.slots.Busy` slots ``/readyz`` watches.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from google.rpc import code_pb2

from otel_traj.serve.codec import (
    ENCODINGS,
    JSON,
    PROTOBUF,
    TooLarge,
    decode_json,
    decode_protobuf,
    decompress,
    response_body,
    status_body,
)
from otel_traj.serve.http_body import BodyCut, BodyReader, BodyTooLarge, BodyTooSlow, ClientGone
from otel_traj.serve.ingest import INTERNAL_ERROR, Ingest, InvalidRequest, ReceiverStats, Refused, Unfit
from otel_traj.serve.logs import LogIngest, decode_logs_json, decode_logs_protobuf, logs_response_body
from otel_traj.serve.slots import Busy

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
TRANSPORT = "http"
TEXT = "text/plain; charset=utf-8"
CLOSE = (b"connection", b"close")


@dataclass(slots=True, frozen=True)
class _Signal:
    """What one path does: its decoders, where decoded requests are admitted (and counted), its reply."""

    ingest: Ingest | LogIngest
    decode_protobuf: Callable[[bytes], Any]
    decode_json: Callable[[bytes], Any]
    response_body: Callable[[Any, str], bytes]

    @property
    def stats(self) -> ReceiverStats:
        return self.ingest.stats


class _Reject(Exception):
    def __init__(
        self, status: int, code: int, text: str, result: str, headers: tuple[tuple[bytes, bytes], ...] = ()
    ):
        super().__init__(text)
        self.status = status
        self.code = code
        self.text = text
        self.result = result
        self.headers = headers


def _retry_after(seconds: float) -> bytes:
    # delay-seconds is an integer in RFC 9110; sub-second values are kept as decimals, which OTel
    # exporters parse, so tests and tight deployments can ask for short delays.
    return (str(int(seconds)) if seconds == int(seconds) else f"{seconds:.3f}").encode()


class OtlpHttpApp:
    """The ASGI callable. ``workers`` threads decode and admit; ``logs`` serves ``/v1/logs``; the
    body settings are :class:`~otel_traj.serve.http_body.BodyReader`'s."""

    def __init__(
        self,
        ingest: Ingest,
        auth_token: str | None = None,
        max_request_bytes: int = 16 * 1024 * 1024,
        workers: int = 4,
        logs: LogIngest | None = None,
        *,
        body_timeout_s: float = 10.0,
        min_body_rate: int = 65_536,
        max_arriving: int = 256,
        max_decoding: int = 1024,
    ) -> None:
        self.ingest = ingest
        self._signals = {PATH: _Signal(ingest, decode_protobuf, decode_json, response_body)}
        if logs is not None:
            self._signals[LOGS_PATH] = _Signal(
                logs, decode_logs_protobuf, decode_logs_json, logs_response_body
            )
        self._token = f"Bearer {auth_token}".encode() if auth_token else None
        self.max_request_bytes = max_request_bytes
        self.body = BodyReader(
            max_bytes=max_request_bytes,
            timeout_s=body_timeout_s,
            min_rate=min_body_rate,
            max_arriving=max_arriving,
        )
        self.busy = Busy(size=workers, deadline_s=body_timeout_s)
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="otel-traj-http")
        self._max_decoding = max_decoding
        self._decoding = 0  # only the event loop changes it

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.lower(): v for k, v in scope["headers"]}
        content_type = _media_type(headers.get(b"content-type", b""))
        # Requests to an unknown path are counted with the traces'.
        signal = self._signals.get(scope["path"], self._signals[PATH])
        try:
            accepted = await self._handle(scope, headers, content_type, receive, signal)
        except _Reject as reject:
            signal.stats.count_request(TRANSPORT, reject.result)
            error_type = _error_type(content_type, headers.get(b"accept", b""))
            if error_type == TEXT:
                body = f"{reject.text}\n".encode()
            else:
                body = status_body(reject.code, reject.text, error_type)
            await _respond(send, reject.status, error_type, body, reject.headers)
            return
        reply_type = JSON if content_type == JSON else PROTOBUF
        signal.stats.count_request(TRANSPORT, "partial" if accepted.rejected else "ok")
        await _respond(send, 200, reply_type, signal.response_body(accepted, reply_type))

    async def _handle(
        self, scope: Scope, headers: dict[bytes, bytes], content_type: str, receive: Receive, signal: _Signal
    ) -> Any:
        if scope["path"] not in self._signals:
            where = f"OTLP traces go to {PATH}" + (
                f", logs to {LOGS_PATH}" if LOGS_PATH in self._signals else ""
            )
            raise _Reject(404, code_pb2.NOT_FOUND, f"no such path; {where}", "invalid")
        if scope["method"] != "POST":
            raise _Reject(405, code_pb2.UNIMPLEMENTED, "only POST is supported", "invalid")
        if self._token is not None and not hmac.compare_digest(
            headers.get(b"authorization", b""), self._token
        ):
            raise _Reject(
                401,
                code_pb2.UNAUTHENTICATED,
                "missing or wrong bearer token",
                "unauthorized",
                ((b"www-authenticate", b"Bearer"),),
            )
        if content_type not in (PROTOBUF, JSON):
            raise _Reject(
                415,
                code_pb2.INVALID_ARGUMENT,
                f"unsupported content type {content_type!r}: send {PROTOBUF} or {JSON}",
                "invalid",
            )
        encoding = (
            headers.get(b"content-encoding", b"identity").decode("latin-1").strip().lower() or "identity"
        )
        if encoding not in ENCODINGS:
            raise _Reject(
                415, code_pb2.INVALID_ARGUMENT, f"unsupported content encoding {encoding!r}", "invalid"
            )
        body = await self._read_body(headers, receive)
        if self._decoding >= self._max_decoding:
            self.busy.starved()
            raise _Reject(
                503,
                code_pb2.UNAVAILABLE,
                f"{self._decoding} requests waiting to be decoded",
                "overloaded",
                ((b"retry-after", _retry_after(self.ingest.retry_after_s)),),
            )
        decode = signal.decode_json if content_type == JSON else signal.decode_protobuf
        loop = asyncio.get_running_loop()
        self._decoding += 1
        try:
            return await loop.run_in_executor(
                self._executor, self._decode_and_accept, body, encoding, decode, signal.ingest
            )
        except TooLarge as exc:
            raise _Reject(413, code_pb2.INVALID_ARGUMENT, str(exc), "too_large") from None
        except Unfit as exc:
            raise _Reject(413, code_pb2.INVALID_ARGUMENT, str(exc), "too_many_traces") from None
        except InvalidRequest as exc:
            raise _Reject(400, code_pb2.INVALID_ARGUMENT, str(exc), "invalid") from None
        except Refused as exc:
            result = "overloaded" if self.ingest.accepting else "unavailable"
            retry = ((b"retry-after", _retry_after(exc.retry_after_s)),)
            raise _Reject(503, code_pb2.UNAVAILABLE, exc.reason, result, retry) from None
        except Exception:
            self.ingest.failed(TRANSPORT)
            raise _Reject(500, code_pb2.INTERNAL, INTERNAL_ERROR, "internal_error") from None
        finally:
            self._decoding -= 1

    def _decode_and_accept(
        self, body: bytes, encoding: str, decode: Callable[[bytes], Any], ingest: Ingest | LogIngest
    ) -> Any:
        with self.busy.slot():  # one per pool thread: never waits
            return ingest.accept(decode(decompress(body, encoding, self.max_request_bytes)))

    async def _read_body(self, headers: dict[bytes, bytes], receive: Receive) -> bytes:
        try:
            return await self.body.read(headers.get(b"content-length"), receive)
        except BodyTooLarge as exc:
            raise _Reject(413, code_pb2.INVALID_ARGUMENT, str(exc), "too_large") from None
        except ClientGone as exc:
            raise _Reject(400, code_pb2.CANCELLED, str(exc), "invalid") from None
        except BodyTooSlow as exc:
            raise _Reject(408, code_pb2.DEADLINE_EXCEEDED, str(exc), "body_timeout", (CLOSE,)) from None
        except BodyCut as exc:
            retry = (b"retry-after", _retry_after(self.ingest.retry_after_s))
            raise _Reject(503, code_pb2.UNAVAILABLE, str(exc), "body_evicted", (retry, CLOSE)) from None

    def close(self) -> None:
        self._executor.shutdown(wait=True)


def _media_type(header: bytes) -> str:
    return header.decode("latin-1").split(";")[0].strip().lower()


def _error_type(content_type: str, accept: bytes) -> str:
    """The encoding of an error reply: the request's when OTLP has one, else the first of ``Accept``."""
    if content_type in (PROTOBUF, JSON):
        return content_type
    for entry in accept.split(b","):
        media_type = _media_type(entry)
        if media_type in (PROTOBUF, JSON):
            return media_type
    return TEXT


async def _respond(
    send: Send, status: int, content_type: str, body: bytes, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
