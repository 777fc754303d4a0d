"""The uvicorn servers of ``serve``: their configuration (limits, idle timeout, TLS that follows its
files) and the log filter that keeps the operations server's lifecycle lines from printing twice."""

from __future__ import annotations

import contextvars
import logging
import math
import ssl
from typing import Any

import uvicorn
from uvicorn.config import create_ssl_context

from otel_traj.serve.connections import idle_closing_protocol
from otel_traj.serve.tls import ServedCertificate, TlsFiles, follow_in_handshakes

# Calls in progress get this long to finish once shutdown starts; exporters retry the rest elsewhere.
DRAIN_S = 5.0

# Both uvicorn servers log their lifecycle ("Started server process [pid]", "Shutting down", ...) on
# the one "uvicorn.error" logger, with the same words: the operations server's INFO lines would print
# every line twice, so they are left out. Its warnings and errors still pass.
OPERATIONS_SERVER: contextvars.ContextVar[bool] = contextvars.ContextVar("otel_traj_ops", default=False)


class _OperationsServerInfoFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or not OPERATIONS_SERVER.get()


_UVICORN_FILTER = _OperationsServerInfoFilter()


def uvicorn_config(app: Any, idle_timeout_s: float, tls: ServedCertificate | None = None) -> uvicorn.Config:
    """A server of ``serve``'s: no lifespan, no access log, the idle timeout, TLS that follows its files."""
    files = tls.latest() if tls else None
    logging.getLogger("uvicorn.error").addFilter(_UVICORN_FILTER)  # once: the same filter is not added twice
    config = uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        lifespan="off",
        http=idle_closing_protocol(idle_timeout_s),
        # uvicorn's own keep-alive timer, never earlier than the protocol's idle timeout
        timeout_keep_alive=math.ceil(idle_timeout_s),
        timeout_graceful_shutdown=int(DRAIN_S),
        server_header=False,
        ssl_certfile=str(files.cert) if files else None,
        ssl_keyfile=str(files.key) if files else None,
        ssl_ca_certs=str(files.client_ca) if files and files.client_ca else None,
        ssl_cert_reqs=ssl.CERT_REQUIRED if files and files.client_ca else ssl.CERT_NONE,
    )
    if tls is not None:
        config.load()  # builds the SSL context now, so that handshakes can follow the files
        assert config.ssl is not None

        def context_for(files: TlsFiles) -> ssl.SSLContext:
            return create_ssl_context(
                certfile=files.cert,
                keyfile=files.key,
                password=None,
                ssl_version=config.ssl_version,
                cert_reqs=config.ssl_cert_reqs,
                ca_certs=str(files.client_ca) if files.client_ca else None,
                ciphers=config.ssl_ciphers,
            )

        follow_in_handshakes(config.ssl, tls, context_for)
    return config
