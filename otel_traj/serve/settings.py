"""Service settings: constructor arguments with environment-variable defaults (``otel_traj.env``),
checked when the object is made."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from otel_traj import env
from otel_traj.config import AssemblerConfig
from otel_traj.sinks.store_postgres_schema import is_postgres

# Where a service's conversations come from: the traces it grades, other replicas' events, or the
# fleet's PostgreSQL store (``serve.conversation_source``).
CONVERSATIONS_FROM = ("traces", "logs", "store")


@dataclass(slots=True, frozen=True, kw_only=True)
class ServeSettings:
    """What ``otel-traj serve`` listens on and how much it holds.

    Ports: 0 picks a free port (the chosen ones are printed on startup). ``store``: the SQLite file
    or the ``postgresql://`` URL verdicts are written to (empty: no store); ``store_retention_s``:
    how long a PostgreSQL store keeps runs (0: forever). ``max_request_bytes`` applies after decompression.
    ``retry_after_s``: the delay an overloaded receiver asks exporters to wait. ``store_queue``:
    verdicts waiting for the store writer; together with ``assembler.max_traces`` it bounds what a
    flood can make the service hold. ``tls_cert`` / ``tls_key``: PEM files that put both OTLP ports
    on TLS (given together; the metrics port stays plain HTTP for scrapers and probes).
    ``tls_client_ca``: PEM certificates of the authorities whose client certificates the OTLP ports
    accept (mutual TLS: a client without such a certificate is refused at the handshake).
    ``auth_token_file``: a file holding the bearer token, read once by :meth:`bearer_token` (a token
    on the command line is visible to every local user); give it or ``auth_token``, not both.
    ``idle_timeout_s``: how long an HTTP connection (either port) may stay open without sending a
    complete request head, when new or between keep-alive requests; it bounds the connections that
    clients which never speak can hold. ``body_timeout_s``: how long a request whose head arrived may
    take to send its body (HTTP) or its message (gRPC), extended on HTTP by a second for every
    ``min_body_rate`` bytes received; then it is cut (408, the connection closed; ``CANCELLED``).
    ``max_arriving``: requests per OTLP port whose body or message is still arriving; one more cuts
    the one that has waited longest, so slow senders cannot keep new requests out. ``emit_otel``:
    base URL of an OTLP/HTTP receiver the ``gen_ai.evaluation.result`` events are exported to
    (``<emit_otel>/v1/logs``); unset, none.
    ``conversations_from``: ``traces`` (conversations from the traces this service grades) or
    ``logs`` (from the trace summaries other replicas' events carry, received on the OTLP logs
    endpoints; this service's own traces then reach its conversations only through those events)
    or ``store`` (every replica's summaries in the PostgreSQL ``store``, each conversation claimed
    and graded by one replica when idle). ``mcp``: the MCP server over the store at ``/mcp`` on the
    OTLP/HTTP port, behind the bearer token (``otel_traj.serve.mcp_mount``).
    """

    host: str = field(default_factory=env.HOST.read)
    grpc_port: int = field(default_factory=env.GRPC_PORT.read)
    http_port: int = field(default_factory=env.HTTP_PORT.read)
    metrics_port: int = field(default_factory=env.METRICS_PORT.read)
    policy: str | None = field(default_factory=env.POLICY.read)
    store: str | None = field(default_factory=env.STORE.read)
    auth_token: str | None = field(default_factory=env.AUTH_TOKEN.read)
    auth_token_file: str | None = field(default_factory=env.AUTH_TOKEN_FILE.read)
    tls_cert: str | None = field(default_factory=env.TLS_CERT.read)
    tls_key: str | None = field(default_factory=env.TLS_KEY.read)
    tls_client_ca: str | None = field(default_factory=env.TLS_CLIENT_CA.read)
    max_request_bytes: int = field(default_factory=env.MAX_REQUEST_BYTES.read)
    retry_after_s: float = field(default_factory=env.RETRY_AFTER_S.read)
    store_queue: int = field(default_factory=env.STORE_QUEUE.read)
    store_retention_s: float = field(default_factory=env.STORE_RETENTION.read)
    mcp: bool = field(default_factory=env.MCP.read)
    grpc_workers: int = field(default_factory=env.GRPC_WORKERS.read)
    idle_timeout_s: float = field(default_factory=env.IDLE_TIMEOUT_S.read)
    body_timeout_s: float = field(default_factory=env.BODY_TIMEOUT_S.read)
    min_body_rate: int = field(default_factory=env.MIN_BODY_RATE.read)
    max_arriving: int = field(default_factory=env.MAX_ARRIVING.read)
    emit_otel: str | None = field(default_factory=env.EMIT_OTEL.read)
    conversations_from: str = field(default_factory=env.CONVERSATIONS_FROM.read)
    assembler: AssemblerConfig = field(default_factory=AssemblerConfig)

    def __post_init__(self) -> None:
        for name in ("grpc_port", "http_port", "metrics_port"):
            env.PORT.require(name, getattr(self, name))
        for name in ("max_request_bytes", "store_queue", "grpc_workers", "max_arriving"):
            env.COUNT.require(name, getattr(self, name))
        env.SECONDS.require("retry_after_s", self.retry_after_s)
        env.SECONDS.require("store_retention_s", self.store_retention_s)
        env.POSITIVE_SECONDS.require("idle_timeout_s", self.idle_timeout_s)
        env.POSITIVE_SECONDS.require("body_timeout_s", self.body_timeout_s)
        env.SIZE.require("min_body_rate", self.min_body_rate)
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError(
                "tls_cert and tls_key: give both (a PEM certificate chain and its key) or neither"
            )
        if self.tls_client_ca and not self.tls_cert:
            raise ValueError("tls_client_ca: client certificates need TLS, give tls_cert and tls_key too")
        if self.auth_token and self.auth_token_file:
            raise ValueError("auth_token and auth_token_file: give one or the other, not both")
        if self.conversations_from not in CONVERSATIONS_FROM:
            raise ValueError(
                f"conversations_from={self.conversations_from!r}: expected one of "
                + ", ".join(CONVERSATIONS_FROM)
            )
        if self.mcp and not self.store:
            raise ValueError("mcp: the MCP server reads the store: give store (--store)")
        if self.conversations_from == "store" and not is_postgres(self.store):
            raise ValueError("conversations_from='store': the store must be a postgresql:// URL")

    def bearer_token(self) -> str | None:
        """The token requests must bear: ``auth_token``, else the content of ``auth_token_file``
        (surrounding whitespace stripped), else None. An unreadable or empty file is a ValueError."""
        if not self.auth_token_file:
            return self.auth_token
        try:
            token = Path(self.auth_token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ValueError(f"auth_token_file {self.auth_token_file!r}: cannot read it: {reason}") from None
        if not token:
            raise ValueError(f"auth_token_file {self.auth_token_file!r}: the file holds no token")
        return token
