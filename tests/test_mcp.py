"""``otel-traj mcp`` driven by the MCP SDK's own client: over stdio (the command spawned as a coding
agent spawns it) and over streamable HTTP, against a store filled by ``otel-traj grade --store``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from mcp import StdioServerParameters
from mcp.client import Client

from otel_traj.cli import main
from otel_traj.sinks.store import connect, read_verdicts
from otel_traj.verdict import OUTCOMES
from tests.mcp_store import CONVERSATION_TRACES, FRAMEWORKS, fill_store
from tests.serve_helpers import Served

ROOT = Path(__file__).resolve().parent.parent
TOOLS = {"list_runs", "get_run", "list_conversations", "compare_versions", "suggest_policy", "check_policy"}
T = TypeVar("T")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fill_store(tmp_path_factory.mktemp("mcp"))


@pytest.fixture(scope="module")
def stored(store: Path) -> list[dict[str, Any]]:
    conn = connect(store, readonly=True)
    try:
        return list(read_verdicts(conn))
    finally:
        conn.close()


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {"PYTHONPATH": path, "OTEL_TRAJ_STORE": "/nonexistent/not-this.db"}


def over_stdio(store: Path, scenario: Callable[[Client], Awaitable[T]]) -> T:
    """``scenario`` on a client of ``otel-traj mcp --store STORE`` spawned over stdio."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "otel_traj.cli", "mcp", "--store", str(store)], env=_env()
    )

    async def session() -> T:
        async with Client(params) as client:
            return await scenario(client)

    return asyncio.run(session())


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def error(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return " ".join(getattr(part, "text", "") for part in result.content)


def test_the_tools_are_read_only_with_typed_inputs_and_outputs(store: Path) -> None:
    async def scenario(client: Client) -> list[Any]:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in over_stdio(store, scenario)}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint, tool.name
        assert tool.output_schema is not None and tool.description, tool.name
    outcome = tools["list_runs"].input_schema["properties"]["outcome"]
    assert [set(o["enum"]) for o in outcome["anyOf"] if "enum" in o] == [set(OUTCOMES)]
    assert tools["get_run"].input_schema["required"] == ["trace_id"]
    assert tools["list_runs"].input_schema["properties"]["limit"]["maximum"] == 100


def test_list_filter_and_page_with_the_cursor(store: Path, stored: list[dict[str, Any]]) -> None:
    async def scenario(client: Client) -> dict[str, Any]:
        pages, cursors, cursor = [], [], None
        while True:
            page = await call(client, "list_runs", limit=5, **({"cursor": cursor} if cursor else {}))
            pages.append(page["runs"])
            cursor = page["next_cursor"]
            cursors.append(cursor)
            if cursor is None:
                break
        return {
            "all": await call(client, "list_runs", limit=100),
            "pages": pages,
            "scope": await call(client, "list_runs", failed_check="scope"),
            "unsafe": await call(client, "list_runs", outcome="unsafe", agent="support_agent"),
            "future": await call(client, "list_runs", since="2200-01-01T00:00:00"),
            "bad_since": await error(client, "list_runs", since="yesterday"),
            "bad_cursor": await error(client, "list_runs", cursor="bm90IGEgY3Vyc29y"),
            "other_cursor": await error(client, "list_conversations", cursor=cursors[0]),
            "text": await client.call_tool("list_runs", {"limit": 1}),
        }

    got = over_stdio(store, scenario)
    listed = got["all"]["runs"]
    assert len(listed) == len(stored) == 2 * len(FRAMEWORKS) + 2 * CONVERSATION_TRACES
    assert [r["trace_id"] for r in listed] == [v["trace_id"] for v in stored]
    assert got["all"]["next_cursor"] is None
    assert [len(p) for p in got["pages"]] == [5, 5, 5, 1]
    assert [r for p in got["pages"] for r in p] == listed

    scoped = got["scope"]["runs"]
    # The three recorded violating runs, and version 1.3's run that read another customer's invoices.
    assert len(scoped) == len(FRAMEWORKS) + 1
    for run in scoped:
        [scope] = [c for c in run["failed_checks"] if c["name"] == "scope"]
        assert scope["severity"] == "critical" and "subject is C023" in scope["reason"]
        assert len(scope["steps"]) == 1
    assert {r["trace_id"] for r in got["unsafe"]["runs"]} == {r["trace_id"] for r in scoped}
    assert got["future"] == {"runs": [], "next_cursor": None}
    assert "since 'yesterday': expected a duration like 1h" in got["bad_since"]
    assert "not a cursor of list_runs" in got["bad_cursor"]
    assert "not a cursor of list_conversations" in got["other_cursor"]
    # A client that reads only the text content gets the same JSON.
    text = got["text"]
    assert json.loads(text.content[0].text) == text.structured_content
    assert text.structured_content["runs"] == listed[:1] and text.structured_content["next_cursor"]


def test_get_run_gives_the_verdict_and_the_offending_steps(store: Path) -> None:
    async def scenario(client: Client) -> tuple[dict[str, Any], dict[str, Any], str]:
        scoped = (await call(client, "list_runs", failed_check="scope"))["runs"]
        [run] = [r for r in scoped if r["service_version"] == "1.3"]
        return (
            run,
            await call(client, "get_run", trace_id=run["trace_id"].upper()),
            await error(client, "get_run", trace_id="0" * 32),
        )

    run, detail, missing = over_stdio(store, scenario)
    verdict = detail["verdict"]
    assert verdict["trace_id"] == run["trace_id"] and verdict["service_version"] == "1.3"
    assert [c["name"] for c in verdict["checks"] if c["status"] == "fail"] == ["scope"]
    [step] = detail["offending_steps"]["scope"]
    assert step["name"] == "list_invoices" and step["arguments"] == {"customer_id": "C077"}
    assert step["step_id"] == run["failed_checks"][0]["steps"][0]
    assert detail["tool_calls_total"] == len(verdict["tool_calls"]) == 1
    assert detail["next_cursor"] is None
    assert f"no stored run has trace id {'0' * 32!r}" in missing


def test_compare_versions_applies_the_release_gate_to_stored_runs(store: Path) -> None:
    async def scenario(client: Client) -> list[Any]:
        v12, v13 = {"service_version": "1.2"}, {"service_version": "1.3"}
        return [
            await call(client, "compare_versions", baseline=v12, candidate=v13),
            await call(client, "compare_versions", baseline=v13, candidate=v12),
            await error(client, "compare_versions", baseline=v12, candidate={"service_version": "9"}),
        ]

    blocked, reverse, none = over_stdio(store, scenario)
    assert blocked["allowed"] is False
    assert blocked["baseline_runs"] == blocked["candidate_runs"] == CONVERSATION_TRACES
    assert any("is unsafe (scope), the baseline was not" in r for r in blocked["reasons"])
    assert {c["case"]: c["paired_by"] for c in blocked["cases"]} == {
        "conv-switch": "conversation",
        "conv-clean": "conversation",
    }
    assert reverse["allowed"] is True and reverse["reasons"] == []
    assert "--candidate-where service_version=9: no run in" in none


def test_suggest_a_policy_from_the_store_and_check_it(store: Path) -> None:
    bad = "version: 1\ndefaults:\n  budget: {max_tool_calls: -1}\n  scope: {argumentz: {}}\n"

    async def scenario(client: Client) -> list[Any]:
        suggested = await call(client, "suggest_policy", min_runs=2, subject_attributes=["app.customer_id"])
        return [
            suggested,
            await call(client, "check_policy", text=suggested["policy"]),
            await call(client, "check_policy", text=bad),
            await call(client, "check_policy", text="{", syntax="json"),
            await call(client, "suggest_policy", min_runs=1000),
        ]

    suggested, valid, invalid, broken, too_few = over_stdio(store, scenario)
    assert [a["agent"] for a in suggested["agents"]] == ["support_agent"]
    assert "support_agent:" in suggested["policy"] and "scope:" in suggested["policy"]
    assert valid["valid"] is True and valid["problems"] == [] and valid["agents"] == ["support_agent"]
    assert invalid["valid"] is False
    assert {(p["field"], p["problem"]) for p in invalid["problems"]} == {
        ("defaults.budget.max_tool_calls", "Input should be greater than or equal to 0 (got -1)"),
        ("defaults.scope.argumentz", "unknown key"),
    }
    assert broken["problems"] == [
        {"field": "", "problem": "invalid JSON at line 1: Expecting property name enclosed in double quotes"}
    ]
    assert too_few["policy"] is None and too_few["agents"] == []
    assert any("fewer than" in note for note in too_few["notes"])


def test_list_conversations(store: Path) -> None:
    async def scenario(client: Client) -> list[Any]:
        return [
            await call(client, "list_conversations"),
            await call(client, "list_conversations", failed_check="conversation_scope", limit=1),
        ]

    everything, scoped = over_stdio(store, scenario)
    # Each version's two conversations.
    assert [c["conversation_id"] for c in everything["conversations"]] == ["conv-switch"] * 2 + [
        "conv-clean"
    ] * 2
    assert scoped["next_cursor"] is not None and len(scoped["conversations"]) == 1
    [failed] = [c for c in scoped["conversations"][0]["failed_checks"] if c["name"] == "conversation_scope"]
    assert "conversation subject is C023" in failed["reason"]


@pytest.fixture
def http_server(store: Path) -> Iterator[str]:
    """``otel-traj mcp --http 0``: its URL, read from the line it prints once it listens."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_traj.cli", "mcp", "--store", str(store), "--http", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **_env()},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("otel-traj mcp: listening on http://127.0.0.1:"), line
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_same_tools_over_streamable_http(http_server: str, stored: list[dict[str, Any]]) -> None:
    async def session() -> list[Any]:
        async with Client(http_server) as client:
            listed = await call(client, "list_runs", failed_check="scope", limit=2)
            more = await call(client, "list_runs", failed_check="scope", cursor=listed["next_cursor"])
            detail = await call(client, "get_run", trace_id=listed["runs"][0]["trace_id"])
            bad = await call(client, "check_policy", text="version: 1\ndefaults: {budget: {max_turns: 3}}\n")
            return [listed, more, detail, bad]

    listed, more, detail, bad = asyncio.run(session())
    assert len(listed["runs"]) == 2 and len(more["runs"]) == len(FRAMEWORKS) - 1
    assert more["next_cursor"] is None
    assert detail["verdict"] == next(v for v in stored if v["trace_id"] == listed["runs"][0]["trace_id"])
    assert bad["problems"] == [{"field": "defaults.budget.max_turns", "problem": "unknown key"}]


def test_a_store_that_cannot_be_opened_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "--store", "/nonexistent/verdicts.db"]) == 2
    assert "otel-traj mcp: store: /nonexistent/verdicts.db: no such store" in capsys.readouterr().err


def test_serve_mounts_the_tools_at_mcp_behind_its_bearer_token(
    store: Path, stored: list[dict[str, Any]], tmp_path: Path
) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    served = Served(tmp_path, "--mcp", "--auth-token", "s3cret", store=store)
    try:
        url = f"http://127.0.0.1:{served.http_port}/mcp"

        async def session() -> dict[str, Any]:
            # The SDK's way to send headers: an httpx2 client of one's own.
            http = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"}, timeout=30)
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                return await call(client, "list_runs", failed_check="scope")

        listed = asyncio.run(session())
        refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=10)
        otlp = httpx.post(served.http_url, content=b"", headers={"content-type": "application/x-protobuf"})
    finally:
        served.stop()
    scoped = {
        v["trace_id"]
        for v in stored
        if any(c["name"] == "scope" and c["status"] == "fail" for c in v["checks"])
    }
    assert {r["trace_id"] for r in listed["runs"]} == scoped
    assert refused.status_code == 401
    assert otlp.status_code == 401  # the OTLP receiver behind the same token, beside the mount
