"""The HTTP connections of both uvicorn servers (OTLP/HTTP and the operations port).

uvicorn (h11) closes an idle connection only after it has answered a request on it: a client that
connects and never sends a request, or sends its head a byte at a time, holds the connection until
it leaves. And its ``limit_concurrency`` counts open connections, not requests: 64 such sockets made
``/healthz`` answer 503, 1,024 the OTLP port. Here a connection waits at most ``idle_timeout_s`` for
a complete request head (new, or between keep-alive requests), and the limit counts requests in
progress only, with the probes outside it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection

from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from otel_traj.serve.http_receiver import Receive, Scope, Send

logger = logging.getLogger("otel_traj.serve")

App = Callable[[Scope, Receive, Send], Awaitable[None]]


def idle_closing_protocol(idle_timeout_s: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing a connection that has no request in progress and has not sent
    a complete request head for ``idle_timeout_s`` seconds."""

    class IdleClosingH11Protocol(H11Protocol):
        _idle_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self._wait_for_request()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._wait_for_request()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            super().connection_lost(exc)

        def _wait_for_request(self) -> None:
            self._stop_waiting()
            if not self.transport.is_closing():
                cycle: RequestResponseCycle | None = self.cycle
                self._idle_timer = self.loop.call_later(idle_timeout_s, self._close_if_idle, cycle)

        def _stop_waiting(self) -> None:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
                self._idle_timer = None

        def _close_if_idle(self, cycle: RequestResponseCycle | None) -> None:
            # A request whose head arrived since is the application's to finish (a new cycle), and
            # so is one still being answered (pipelined after the previous response).
            self._idle_timer = None
            current: RequestResponseCycle | None = self.cycle
            if current is cycle and (cycle is None or cycle.response_complete):
                self.transport.close()

    return IdleClosingH11Protocol


class RequestLimit:
    """An ASGI application in front of ``app``: beyond ``limit`` requests in progress, 503 (uvicorn's
    reply to its own limit). Requests for ``exempt`` paths (the probes, answered at once) always pass,
    so a burst of scrapes cannot fail a liveness check."""

    def __init__(self, app: App, limit: int, exempt: Collection[str] = ()) -> None:
        self._app = app
        self._limit = limit
        self._exempt = frozenset(exempt)
        self._in_progress = 0  # only the server's event loop changes it

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self._exempt:
            await self._app(scope, receive, send)
            return
        if self._in_progress >= self._limit:
            logger.warning("%d requests in progress: one more refused with 503", self._in_progress)
            await service_unavailable(scope, receive, send)  # type: ignore[arg-type]
            return
        self._in_progress += 1
        try:
            await self._app(scope, receive, send)
        finally:
            self._in_progress -= 1
