"""``otel-traj mcp``: the verdict store's MCP server, on stdio (the default, as a coding agent starts
it) or on streamable HTTP with ``--http PORT``.

Exit 2 when the store cannot be opened or the port cannot be had.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from otel_traj import env

EXIT_INPUT = 2
STARTED = "otel-traj mcp: listening on http://{host}:{port}/mcp"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the stored verdicts to coding agents over MCP (stdio or HTTP)",
        description="A Model Context Protocol server over the verdict store (read-only): tools "
        "list_runs, get_run, list_conversations, compare_versions, suggest_policy, check_policy. "
        "On stdio by default; on streamable HTTP at /mcp with --http PORT.",
    )
    parser.add_argument("--store", default=env.STORE.read(), help=f"SQLite store ({env.STORE.cite()})")
    parser.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="serve streamable HTTP on PORT (0 picks a free one, printed on stdout) instead of stdio",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address --http listens on (default 127.0.0.1)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("otel-traj mcp: needs the MCP SDK: pip install 'otel-traj[mcp]'", file=sys.stderr)
        return EXIT_INPUT
    from otel_traj.mcp.errors import ToolInputError
    from otel_traj.mcp.server import build_server
    from otel_traj.mcp.store import Store

    store = Store(args.store)
    try:
        store.check()
    except ToolInputError as exc:
        print(f"otel-traj mcp: {exc}", file=sys.stderr)
        return EXIT_INPUT
    server = build_server(store)
    if args.http is None:
        server.run("stdio")
        return 0
    from otel_traj.mcp.http import serve_http
    from otel_traj.serve.listen import PortUnavailable

    try:
        return serve_http(server, args.host, args.http, lambda port: _started(args.host, port))
    except PortUnavailable as exc:
        print(f"otel-traj mcp: --http {exc.port}: {exc.reason} (--host {exc.host})", file=sys.stderr)
        return EXIT_INPUT


def _started(host: str, port: int) -> None:
    print(STARTED.format(host=f"[{host}]" if ":" in host else host, port=port), flush=True)
