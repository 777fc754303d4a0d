"""``serve --mcp``: the MCP server (``otel_traj.mcp``) on the OTLP/HTTP port at ``/mcp``, over the
service's own store and behind its bearer token; every other path is the OTLP receiver's.

Stateless with JSON responses, as ``otel-traj mcp --http``: each tool call reads the store afresh, so
any replica can answer any request. The SDK's session manager runs for as long as the HTTP server
does (``running``): the service's servers have no lifespan of their own.
"""

from __future__ import annotations

import hmac
from contextlib import AbstractAsyncContextManager
from typing import Any

PATH = "/mcp"


class McpMount:
    """The MCP server over ``store``; ``beside(otlp)`` is the ASGI app that routes ``/mcp`` to it and
    the rest to ``otlp``. Raises ValueError when the MCP SDK is not installed."""

    def __init__(self, *, store: str, host: str, auth_token: str | None) -> None:
        try:
            from otel_traj.mcp.server import build_server
            from otel_traj.mcp.store import Store
        except ImportError:
            raise ValueError("mcp: the MCP SDK is not installed: pip install 'otel-traj[mcp]'") from None
        server = build_server(Store(store))
        self._mcp = server.streamable_http_app(stateless_http=True, json_response=True, host=host)
        self._session_manager = server.session_manager
        self._token = f"Bearer {auth_token}".encode() if auth_token else None
        self._otlp: Any = None

    def beside(self, otlp: Any) -> McpMount:
        """This mount in front of the OTLP receiver's app."""
        self._otlp = otlp
        return self

    def running(self) -> AbstractAsyncContextManager[None]:
        """The MCP server's task group, entered in the HTTP server's event loop around its serving."""
        return self._session_manager.run()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == PATH or path.startswith(PATH + "/")):
            await self._otlp(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if self._token is not None and not hmac.compare_digest(
            headers.get(b"authorization", b""), self._token
        ):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                }
            )
            await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
            return
        await self._mcp(scope, receive, send)
