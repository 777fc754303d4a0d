"""OTLP/gRPC: ``opentelemetry.proto.collector.trace.v1.TraceService/Export`` on grpcio, and
``opentelemetry.proto.collector.logs.v1.LogsService/Export`` (the same token, limits and statuses).

The handler takes the raw request bytes (no deserializer registered) so that an undecodable payload
becomes INVALID_ARGUMENT with a message rather than grpcio's generic INTERNAL. gzip is handled by
grpcio. Overload is UNAVAILABLE with a ``RetryInfo``, as the OTLP spec asks of a throttling server,
in both places clients look for it: the ``grpc-status-details-bin`` status and the
``google.rpc.retryinfo-bin`` trailer the Python exporter reads.

Where a call waits: grpcio's sync server gives a unary call a pool thread as soon as its headers
arrive, and the thread waits there, without a deadline, for the message; only then does a unary
handler run. So ``Export`` is registered request-streaming: the handler runs at once, waits for the one
message at most ``body_timeout_s`` (then the call is cancelled) among at most ``max_arriving`` such
calls (one more cancels the one that waited longest), and only a call whose message is complete takes
one of the ``workers`` slots that decode and admit. The bearer token is checked before any of it, on
the call's metadata (:mod:`otel_traj.serve.grpc_auth`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2

from otel_traj.serve.codec import decode_protobuf, response
from otel_traj.serve.deadlines import Deadlines
from otel_traj.serve.grpc_auth import BearerTokenInterceptor
from otel_traj.serve.ingest import INTERNAL_ERROR, Ingest, InvalidRequest, ReceiverStats, Refused, Unfit
from otel_traj.serve.listen import why_unavailable
from otel_traj.serve.logs import LogIngest, decode_logs_protobuf, logs_response
from otel_traj.serve.slots import Arrivals, Busy
from otel_traj.serve.tls import ServedCertificate, TlsFiles

logger = logging.getLogger("otel_traj.serve")

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
TRANSPORT = "grpc"


@dataclass(frozen=True)
class _Status:
    """What ``ServicerContext.abort_with_status`` reads (the ``grpc.Status`` interface)."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: Sequence[tuple[str, bytes]]


def _throttled(reason: str, retry_after_s: float) -> _Status:
    delay = duration_pb2.Duration()
    delay.FromNanoseconds(int(retry_after_s * 1e9))
    info = error_details_pb2.RetryInfo(retry_delay=delay)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message=reason, details=[detail])
    return _Status(
        grpc.StatusCode.UNAVAILABLE,
        reason,
        (
            ("grpc-status-details-bin", status.SerializeToString()),
            ("google.rpc.retryinfo-bin", info.SerializeToString()),
        ),
    )


class _Cut:
    """Why a call waiting for its message was cut, once; settled when the wait ended first. The cut
    is counted before the call is cancelled, so a client told CANCELLED finds it counted."""

    def __init__(self, context: grpc.ServicerContext, stats: ReceiverStats) -> None:
        self._context = context
        self._stats = stats
        self._lock = threading.Lock()
        self._settled = False
        self.reason: str | None = None

    def by(self, reason: str) -> Callable[[], None]:
        def cut() -> None:
            with self._lock:
                if self._settled:
                    return
                self._settled = True
                self.reason = reason
            self._stats.count_request(TRANSPORT, reason)
            self._context.cancel()

        return cut

    def settle(self) -> str | None:
        with self._lock:
            self._settled = True
            return self.reason


def _export_handler(
    behaviour: Callable[[Iterator[bytes], grpc.ServicerContext], Any],
) -> grpc.RpcMethodHandler:
    return grpc.stream_unary_rpc_method_handler(
        behaviour,
        request_deserializer=None,
        response_serializer=lambda message: message.SerializeToString(),
    )


class GrpcReceiver:
    """Serves ``TraceService/Export`` on ``host:port`` (port 0: a free one, see :attr:`port`), and
    ``LogsService/Export`` with ``logs``."""

    def __init__(
        self,
        ingest: Ingest,
        host: str,
        port: int,
        auth_token: str | None = None,
        max_request_bytes: int = 16 * 1024 * 1024,
        workers: int = 8,
        tls: ServedCertificate | None = None,
        logs: LogIngest | None = None,
        body_timeout_s: float = 10.0,
        max_arriving: int = 256,
    ) -> None:
        self.ingest = ingest
        self.logs = logs
        self.body_timeout_s = body_timeout_s
        self.arrivals = Arrivals(limit=max_arriving)
        self.busy = Busy(size=workers, deadline_s=body_timeout_s)
        # Threads for the calls waiting for their message, those decoding, and as many waiting for a
        # decoding slot (at most body_timeout_s, then UNAVAILABLE).
        threads = max_arriving + 2 * workers
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="otel-traj-grpc")
        self._deadlines = Deadlines(name="otel-traj-grpc-deadlines")
        handlers = [grpc.method_handlers_generic_handler(SERVICE, {"Export": _export_handler(self._export)})]
        if logs is not None:
            handlers.append(
                grpc.method_handlers_generic_handler(
                    LOGS_SERVICE, {"Export": _export_handler(self._export_logs)}
                )
            )
        interceptors = [BearerTokenInterceptor(auth_token, self._unauthorized)] if auth_token else []
        self._server = grpc.server(
            self._executor,
            handlers=handlers,
            interceptors=interceptors,
            options=[
                ("grpc.max_receive_message_length", max_request_bytes),
                # grpcio shares a port with any other process that asks (SO_REUSEPORT): a second
                # service on it would silently receive part of every trace. Binding must fail instead.
                ("grpc.so_reuseport", 0),
            ],
            # Beyond this many calls in progress grpcio answers RESOURCE_EXHAUSTED right away instead
            # of queueing without bound.
            maximum_concurrent_rpcs=threads + workers * 4,
        )
        address = f"{host}:{port}"
        try:
            if tls is None:
                self.port: int = self._server.add_insecure_port(address)
            else:
                self.port = self._server.add_secure_port(address, _following(tls))
        except RuntimeError:
            raise why_unavailable("grpc_port", host, port) from None

    def start(self) -> None:
        self._server.start()

    def stop(self, grace_s: float) -> None:
        """Refuse new calls, let calls in progress finish within ``grace_s``, then end the call
        threads (grpcio leaves the executor it was given running)."""
        self._server.stop(grace_s).wait()
        self._executor.shutdown(wait=True)
        self._deadlines.close()

    def _unauthorized(self, method: str) -> None:
        logs = self.logs is not None and method.startswith(f"/{LOGS_SERVICE}/")
        (self.logs.stats if self.logs is not None and logs else self.ingest.stats).count_request(
            TRANSPORT, "unauthorized"
        )

    def _export(self, requests: Iterator[bytes], context: grpc.ServicerContext) -> Any:
        return self._serve(requests, context, self.ingest.stats, self._accept_traces)

    def _export_logs(self, requests: Iterator[bytes], context: grpc.ServicerContext) -> Any:
        assert self.logs is not None  # registered only with logs
        return self._serve(requests, context, self.logs.stats, self._accept_logs)

    def _receive(
        self, requests: Iterator[bytes], context: grpc.ServicerContext, stats: ReceiverStats
    ) -> bytes:
        """The call's one message, or the call ended: cut (too slow, or crowded out by newer calls),
        cancelled by the client, or closed without a message."""
        cut = _Cut(context, stats)
        with self.arrivals.arriving(cut.by("body_evicted")):
            deadline = self._deadlines.call_after(self.body_timeout_s, cut.by("body_timeout"))
            try:
                data = next(requests, None)
            except grpc.RpcError:
                data = None
            finally:
                deadline.cancel()
        reason = cut.settle()
        if reason is not None:
            # The call is cancelled already (the client sees CANCELLED, retryable); this ends the handler.
            context.abort(grpc.StatusCode.CANCELLED, f"the request message did not arrive ({reason})")
        if data is None:
            if context.is_active():
                stats.count_request(TRANSPORT, "invalid")
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "Export takes exactly one request message")
            context.abort(grpc.StatusCode.CANCELLED, "cancelled by the client")
        assert data is not None  # abort raised
        return data

    def _accept_traces(self, data: bytes) -> tuple[Any, int]:
        accepted = self.ingest.accept(decode_protobuf(data))
        return response(accepted), accepted.rejected

    def _accept_logs(self, data: bytes) -> tuple[Any, int]:
        assert self.logs is not None
        accepted = self.logs.accept(decode_logs_protobuf(data))
        return logs_response(accepted), accepted.rejected

    def _serve(
        self,
        requests: Iterator[bytes],
        context: grpc.ServicerContext,
        stats: ReceiverStats,
        export: Callable[[bytes], tuple[Any, int]],
    ) -> Any:
        data = self._receive(requests, context, stats)
        with self.busy.slot(self.body_timeout_s) as free:
            if not free:
                stats.count_request(TRANSPORT, "overloaded")
                reason = f"all {self.busy.size} decoding slots busy"
                context.abort_with_status(_throttled(reason, self.ingest.retry_after_s))
            return self._decode(data, context, stats, export)

    def _decode(
        self,
        data: bytes,
        context: grpc.ServicerContext,
        stats: ReceiverStats,
        export: Callable[[bytes], tuple[Any, int]],
    ) -> Any:
        try:
            reply, rejected = export(data)
        except Unfit as exc:
            stats.count_request(TRANSPORT, "too_many_traces")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except InvalidRequest as exc:
            stats.count_request(TRANSPORT, "invalid")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except Refused as exc:
            stats.count_request(TRANSPORT, "unavailable" if not self.ingest.accepting else "overloaded")
            context.abort_with_status(_throttled(exc.reason, exc.retry_after_s))
        except Exception:
            stats.count_request(TRANSPORT, "internal_error")
            self.ingest.failed(TRANSPORT)
            context.abort(grpc.StatusCode.INTERNAL, INTERNAL_ERROR)
        stats.count_request(TRANSPORT, "partial" if rejected else "ok")
        return reply


def _following(certificate: ServedCertificate) -> grpc.ServerCredentials:
    """Credentials that grpcio asks again on every new connection: a changed pair is served from
    the next handshake on."""
    served = certificate.latest()

    def configuration(files: TlsFiles) -> grpc.ServerCertificateConfiguration:
        return grpc.ssl_server_certificate_configuration(
            [(files.key_pem, files.cert_pem)], root_certificates=files.client_ca_pem
        )

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        nonlocal served
        files = certificate.latest()
        if files is served:
            return None
        served = files
        return configuration(files)

    # Mutual TLS is on or off for the service's life: only the certificates change.
    return grpc.dynamic_ssl_server_credentials(
        configuration(served), fetch, require_client_authentication=served.client_ca_pem is not None
    )
