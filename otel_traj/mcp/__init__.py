"""``otel-traj mcp``: the verdict store as a Model Context Protocol server, for coding agents and any
MCP client (``server.build_server``; the command is ``otel_traj.cli.mcp``)."""
