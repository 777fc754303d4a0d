"""Binding the service's ports: a port that cannot be had stops startup, naming its setting.

No port is shared: two processes listening on one port would each receive part of a trace's spans
and grade the halves apart, so a second ``serve`` on a taken port must fail rather than start.
"""

from __future__ import annotations

import errno
import socket

_REASONS = {
    errno.EADDRINUSE: "address in use",
    errno.EADDRNOTAVAIL: "address not available",
    errno.EACCES: "permission denied",
}


class PortUnavailable(OSError):
    """``setting`` (``grpc_port``, ``http_port``, ``metrics_port``) names a port that cannot be bound."""

    def __init__(self, setting: str, host: str, port: int, reason: str) -> None:
        super().__init__(f"{setting}={port}: {reason} ({host}:{port})")
        self.setting = setting
        self.host = host
        self.port = port
        self.reason = reason


def listen(setting: str, host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free one).

    SO_REUSEADDR only lets a restart bind while the old process's connections are in TIME_WAIT; it
    never lets two listening sockets share the port (SO_REUSEPORT would, and is left off)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        reason = _REASONS.get(exc.errno or 0) or (exc.strerror or str(exc)).lower()
        raise PortUnavailable(setting, host, port, reason) from None
    return sock


def why_unavailable(setting: str, host: str, port: int) -> PortUnavailable:
    """The error for a port another library failed to bind without saying why (grpcio): binding the
    same address here finds the reason."""
    try:
        listen(setting, host, port).close()
    except PortUnavailable as exc:
        return exc
    return PortUnavailable(setting, host, port, "cannot listen")
