"""The MCP server on streamable HTTP (``otel-traj mcp --http PORT``), served by uvicorn.

Stateless, with JSON responses: every tool reads the store and keeps nothing between calls, so no
session is held and any replica can answer any request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import uvicorn
from mcp.server.mcpserver import MCPServer

from otel_traj.serve.listen import listen


def serve_http(server: MCPServer, host: str, port: int, started: Callable[[int], None]) -> int:
    """Serve until interrupted; ``started`` gets the bound port once connections are accepted."""
    app = server.streamable_http_app(stateless_http=True, json_response=True, host=host)
    sock = listen("http", host, port)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    runner = uvicorn.Server(config)
    # The socket listens already: a client that connects now waits in its backlog until uvicorn accepts.
    started(sock.getsockname()[1])
    asyncio.run(runner.serve(sockets=[sock]))
    return 0
