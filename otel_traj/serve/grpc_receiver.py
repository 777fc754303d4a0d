"""OTLP/gRPC: ``opentelemetry.proto.collector.trace.v1.TraceService/Export`` on grpcio, and
``opentelemetry.proto.collector.logs.v1.LogsService/Export`` (the same token, limits and statuses).

The handler takes the raw request bytes (no deserializer registered) so that an undecodable payload
becomes INVALID_ARGUMENT with a message rather than grpcio's generic INTERNAL. gzip is handled by
grpcio. Overload is UNAVAILABLE with a ``RetryInfo``, as the OTLP spec asks of a throttling server,
in both places clients look for it: the ``grpc-status-details-bin`` status and the
``google.rpc.retryinfo-bin`` trailer the Python exporter reads.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2

from otel_traj.serve.codec import decode_protobuf, response
from otel_traj.serve.ingest import INTERNAL_ERROR, Ingest, InvalidRequest, ReceiverStats, Refused
from otel_traj.serve.listen import why_unavailable
from otel_traj.serve.logs import LogIngest, decode_logs_protobuf, logs_response
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


def _export_handler(behaviour: Callable[[bytes, grpc.ServicerContext], Any]) -> grpc.RpcMethodHandler:
    return grpc.unary_unary_rpc_method_handler(
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
    ) -> None:
        self.ingest = ingest
        self.logs = logs
        self._token = f"Bearer {auth_token}".encode() if auth_token else None
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="otel-traj-grpc")
        handlers = [grpc.method_handlers_generic_handler(SERVICE, {"Export": _export_handler(self._export)})]
        if logs is not None:
            handlers.append(
                grpc.method_handlers_generic_handler(
                    LOGS_SERVICE, {"Export": _export_handler(self._export_logs)}
                )
            )
        self._server = grpc.server(
            self._executor,
            handlers=handlers,
            options=[
                ("grpc.max_receive_message_length", max_request_bytes),
                # grpcio shares a port with any other process that asks (SO_REUSEPORT): a second
                # service on it would silently receive part of every trace. Binding must fail instead.
                ("grpc.so_reuseport", 0),
            ],
            # Beyond this many calls in progress grpcio answers RESOURCE_EXHAUSTED right away instead
            # of queueing without bound.
            maximum_concurrent_rpcs=workers * 4,
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

    def _authorized(self, context: grpc.ServicerContext) -> bool:
        if self._token is None:
            return True
        for key, value in context.invocation_metadata():
            if key == "authorization":
                given = value.encode() if isinstance(value, str) else value
                return hmac.compare_digest(given, self._token)
        return False

    def _export(self, data: bytes, context: grpc.ServicerContext) -> Any:
        return self._serve(data, context, self.ingest.stats, self._accept_traces)

    def _export_logs(self, data: bytes, context: grpc.ServicerContext) -> Any:
        assert self.logs is not None  # registered only with logs
        return self._serve(data, context, self.logs.stats, self._accept_logs)

    def _accept_traces(self, data: bytes) -> tuple[Any, int]:
        accepted = self.ingest.accept(decode_protobuf(data))
        return response(accepted), accepted.rejected

    def _accept_logs(self, data: bytes) -> tuple[Any, int]:
        assert self.logs is not None
        accepted = self.logs.accept(decode_logs_protobuf(data))
        return logs_response(accepted), accepted.rejected

    def _serve(
        self,
        data: bytes,
        context: grpc.ServicerContext,
        stats: ReceiverStats,
        export: Callable[[bytes], tuple[Any, int]],
    ) -> Any:
        if not self._authorized(context):
            stats.count_request(TRANSPORT, "unauthorized")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        try:
            reply, rejected = export(data)
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
