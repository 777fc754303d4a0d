"""``list_runs``, ``get_run`` and ``list_conversations``: the stored verdicts, a page at a time.

Runs and conversations come oldest first, as ``otel-traj report`` lists them; a page's cursor holds
the start time and id of its last item, so a page is the same whatever was stored since.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from otel_traj.mcp.bounds import MAX_STEP_IDS, STEPS_PER_PAGE, clip, decode_cursor, encode_cursor, page
from otel_traj.mcp.errors import ToolInputError
from otel_traj.mcp.store import Store, since_ns
from otel_traj.sinks.store_schema import Query
from otel_traj.verdict import Outcome


class FailedCheck(BaseModel):
    name: str
    severity: str
    reason: str
    steps: list[str] = Field(description="ids of the offending steps (tool or model calls)")


class RunSummary(BaseModel):
    trace_id: str
    agent: str
    service_name: str | None
    service_version: str | None
    conversation_id: str | None
    outcome: Outcome
    score: float
    started: str = Field(description="start of the run, ISO 8601 UTC")
    duration_s: float
    tool_calls: int
    failed_checks: list[FailedCheck]


class RunPage(BaseModel):
    runs: list[RunSummary]
    next_cursor: str | None = Field(description="pass it, with the same filters, for the next page")


class ConversationSummary(BaseModel):
    conversation_id: str
    agent: str
    outcome: Outcome
    score: float
    started: str
    complete: bool
    trace_ids: list[str]
    tool_calls: int
    failed_checks: list[FailedCheck]


class ConversationPage(BaseModel):
    conversations: list[ConversationSummary]
    next_cursor: str | None


class RunDetail(BaseModel):
    verdict: dict[str, Any] = Field(
        description="the stored verdict: trajectory, checks, versions; tool_calls and model_calls "
        "hold this page's steps"
    )
    offending_steps: dict[str, list[dict[str, Any]]] = Field(
        description="for each failed check, the steps it names (wherever they are in the run)"
    )
    tool_calls_total: int
    model_calls_total: int
    next_cursor: str | None = Field(description="pass it with the trace id for the next steps")


def _started(record: Mapping[str, Any]) -> str:
    return datetime.fromtimestamp(record["start_ns"] / 1e9, tz=UTC).isoformat(timespec="milliseconds")


def _failed(record: Mapping[str, Any]) -> list[FailedCheck]:
    return [
        FailedCheck(
            name=c["name"],
            severity=c["severity"],
            reason=clip(c.get("reason") or ""),
            steps=list(c.get("steps") or ())[:MAX_STEP_IDS],
        )
        for c in record["checks"]
        if c["status"] == "fail"
    ]


def run_summary(verdict: Mapping[str, Any]) -> RunSummary:
    return RunSummary(
        trace_id=verdict["trace_id"],
        agent=verdict["agent"],
        service_name=verdict.get("service_name"),
        service_version=verdict.get("service_version"),
        conversation_id=verdict.get("conversation_id"),
        outcome=verdict["outcome"],
        score=verdict["score"],
        started=_started(verdict),
        duration_s=verdict["duration_s"],
        tool_calls=sum(1 for t in verdict["tool_calls"] if t.get("kind") != "output"),
        failed_checks=_failed(verdict),
    )


def _size(model: BaseModel) -> int:
    return len(model.model_dump_json())


def _position(cursor: str | None, kind: str) -> tuple[int, str] | None:
    """The (start time, id) of the last item of the page a cursor of ``kind`` followed."""
    if cursor is None:
        return None
    at = decode_cursor(cursor, kind)
    if not (isinstance(at, list) and len(at) == 2 and isinstance(at[0], int) and isinstance(at[1], str)):
        raise ToolInputError("cursor: damaged; pass the next_cursor a call returned")
    return at[0], at[1]


def _after(
    records: Iterable[dict[str, Any]], key: str, after: tuple[int, str] | None
) -> Iterator[dict[str, Any]]:
    """The records past ``after``, in the store's order (start time, then id)."""
    for record in records:
        if after is None or (record["start_ns"], record[key]) > after:
            yield record


def list_runs(
    store: Store,
    *,
    agent: str | None,
    outcome: Outcome | None,
    failed_check: str | None,
    since: str | None,
    limit: int,
    cursor: str | None,
) -> RunPage:
    after = _position(cursor, "list_runs")
    start = since_ns(since)
    if after is not None:
        start = max(start or 0, after[0])
    query = Query(since_ns=start, agent=agent, outcome=outcome, failed=failed_check)
    with store.reading() as reader:
        records = _after(reader.verdicts(query), "trace_id", after)
        summaries = ((record, run_summary(record)) for record in records)
        taken, more = page(summaries, limit, lambda pair: _size(pair[1]))
    last = taken[-1][0] if taken and more else None
    next_cursor = encode_cursor("list_runs", [last["start_ns"], last["trace_id"]]) if last else None
    return RunPage(runs=[summary for _, summary in taken], next_cursor=next_cursor)


def _steps(verdict: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["step_id"]: s for s in (*verdict["tool_calls"], *verdict["model_calls"]) if "step_id" in s}


def get_run(store: Store, *, trace_id: str, cursor: str | None) -> RunDetail:
    offset = decode_cursor(cursor, f"get_run {trace_id}") if cursor else 0
    if not isinstance(offset, int) or offset < 0:
        raise ToolInputError("cursor: damaged; pass the next_cursor a call returned")
    with store.reading() as reader:
        verdict = next(iter(reader.trajectories([trace_id.strip().lower()])), None)
    if verdict is None:
        raise ToolInputError(f"trace_id: no stored run has trace id {trace_id!r} (32 hex digits)")
    by_id = _steps(verdict)
    offending = {
        c["name"]: [clip(by_id[s]) for s in c["steps"][:MAX_STEP_IDS] if s in by_id]
        for c in verdict["checks"]
        if c["status"] == "fail"
    }
    tools, models = verdict["tool_calls"], verdict["model_calls"]
    end = offset + STEPS_PER_PAGE
    shown = dict(verdict, tool_calls=tools[offset:end], model_calls=models[offset:end])
    more = end < max(len(tools), len(models))
    return RunDetail(
        verdict=clip(shown),
        offending_steps=offending,
        tool_calls_total=len(tools),
        model_calls_total=len(models),
        next_cursor=encode_cursor(f"get_run {verdict['trace_id']}", end) if more else None,
    )


def _conversation(record: Mapping[str, Any]) -> ConversationSummary:
    return ConversationSummary(
        conversation_id=record["conversation_id"],
        agent=record["agent"],
        outcome=record["outcome"],
        score=record["score"],
        started=_started(record),
        complete=record["complete"],
        trace_ids=list(record["trace_ids"]),
        tool_calls=record["tool_calls"],
        failed_checks=_failed(record),
    )


def list_conversations(
    store: Store,
    *,
    agent: str | None,
    outcome: Outcome | None,
    failed_check: str | None,
    since: str | None,
    limit: int,
    cursor: str | None,
) -> ConversationPage:
    after = _position(cursor, "list_conversations")
    query = Query(since_ns=since_ns(since), agent=agent, outcome=outcome, failed=failed_check)
    with store.reading() as reader:
        records = _after(reader.conversations(query), "conversation_id", after)
        summaries = ((record, _conversation(record)) for record in records)
        taken, more = page(summaries, limit, lambda pair: _size(pair[1]))
    last = taken[-1][0] if taken and more else None
    position = [last["start_ns"], last["conversation_id"]] if last else None
    return ConversationPage(
        conversations=[summary for _, summary in taken],
        next_cursor=encode_cursor("list_conversations", position) if position else None,
    )
