"""Tools on an MCP server (tests/fixtures/real/pydantic_ai_mcp): each call is recorded by the agent,
the MCP client and the server in its own process. The server's clock is not the caller's: however
far apart they are, each call is one call."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from otel_traj.adapters import read_trace_file
from otel_traj.config import AssemblerConfig
from otel_traj.offline import trajectories_from_views

FIXTURE = Path(__file__).parent / "fixtures" / "real" / "pydantic_ai_mcp"
SERVER = "support-tools-mcp-pydantic_ai_mcp"
MS = 1_000_000


@pytest.mark.parametrize("scenario", ["clean", "violating"])
@pytest.mark.parametrize("skew_ms", [-50, -2, 0, 3, 50])
def test_the_servers_clock_does_not_change_the_calls(scenario: str, skew_ms: int) -> None:
    views = read_trace_file(FIXTURE / f"{scenario}.otlp.pb").views
    assert any(v.resource.get("service.name") == SERVER for v in views)
    shifted = [
        replace(v, start_ns=v.start_ns + skew_ms * MS, end_ns=v.end_ns + skew_ms * MS)
        if v.resource.get("service.name") == SERVER
        else v
        for v in views
    ]
    [run] = trajectories_from_views(shifted, AssemblerConfig())
    facts = json.loads((FIXTURE / f"{scenario}.facts.json").read_text())
    assert Counter(c.name for c in run.tool_calls) == Counter(c["name"] for c in facts["tool_calls"])
    assert all(c.call_id and c.arguments is not None and c.observed for c in run.tool_calls)
    assert [c.ok for c in sorted(run.tool_calls, key=lambda c: c.call_id or "")] == [
        c["ok"] for c in facts["tool_calls"]
    ]
