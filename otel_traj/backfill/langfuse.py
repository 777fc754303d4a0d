"""A Langfuse project's traces and their observations, read through the public API's Observations
API v2 (``GET /api/public/v2/observations``, cursor-paginated).

Langfuse deprecated ``GET /api/public/traces`` and ``GET /api/public/observations`` for this endpoint
(the ``langfuse`` package's client has only it), which is also its one real-time read path. A trace
is listed by its root observations (``isRootObservation``), filtered by start time, trace name,
tags, user, session and environment through the structured ``filter`` parameter; then every
observation of each trace is fetched with the field groups a run is rebuilt from, the metadata
Langfuse keeps of an OpenTelemetry span expanded (it truncates metadata values to 200 characters
otherwise).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from otel_traj.backfill.http import PoliteClient, ReadError

OBSERVATIONS = "api/public/v2/observations"
# Field groups of a trace's observations: ids and times, names and levels, input and output,
# metadata (the OTel attributes), model and usage.
FIELDS = "core,basic,time,io,metadata,model,usage"
EXPANDED_METADATA = "attributes,resourceAttributes,scope,scopeAttributes"
MAX_PAGE = 1000


@dataclass(slots=True, frozen=True, kw_only=True)
class TraceFilter:
    """Which traces to read: started in [since_ns, until_ns), with this trace name, all these tags,
    this user, session, environment (None: any)."""

    since_ns: int | None = None
    until_ns: int | None = None
    name: str | None = None
    tags: tuple[str, ...] = ()
    user_id: str | None = None
    session_id: str | None = None
    environment: str | None = None


@dataclass(slots=True, frozen=True)
class TraceRef:
    """A trace listed: its id, when its root started, and whether its root has ended."""

    trace_id: str
    start_ns: int
    ended: bool


def iso(ns: int) -> str:
    """ISO 8601 in UTC, to the microsecond, of nanoseconds since the epoch."""
    when = dt.datetime.fromtimestamp(ns // 1_000_000_000, dt.UTC) + dt.timedelta(
        microseconds=(ns % 1_000_000_000) // 1_000
    )
    return when.isoformat().replace("+00:00", "Z")


def filter_conditions(query: TraceFilter) -> list[dict[str, Any]]:
    """The ``filter`` parameter's conditions (it takes precedence over the single-field parameters,
    so every condition goes in it)."""
    conditions: list[dict[str, Any]] = [
        {"type": "boolean", "column": "isRootObservation", "operator": "=", "value": True}
    ]
    if query.since_ns is not None:
        conditions.append(
            {"type": "datetime", "column": "startTime", "operator": ">=", "value": iso(query.since_ns)}
        )
    if query.until_ns is not None:
        conditions.append(
            {"type": "datetime", "column": "startTime", "operator": "<", "value": iso(query.until_ns)}
        )
    for column, value in (
        ("traceName", query.name),
        ("userId", query.user_id),
        ("sessionId", query.session_id),
        ("environment", query.environment),
    ):
        if value is not None:
            conditions.append({"type": "string", "column": column, "operator": "=", "value": value})
    if query.tags:
        conditions.append(
            {"type": "arrayOptions", "column": "tags", "operator": "all of", "value": list(query.tags)}
        )
    return conditions


def _page(body: Any) -> tuple[list[Mapping[str, Any]], str | None]:
    if not isinstance(body, Mapping) or not isinstance(body.get("data"), list):
        raise ReadError("the observations answer has no data list")
    meta = body.get("meta")
    cursor = meta.get("cursor") if isinstance(meta, Mapping) else None
    rows = [row for row in body["data"] if isinstance(row, Mapping)]
    return rows, cursor if isinstance(cursor, str) and cursor else None


class LangfuseReader:
    """Reads one project (the client's credentials) ``page_size`` observations a request."""

    def __init__(self, client: PoliteClient, *, page_size: int = 100) -> None:
        if not 1 <= page_size <= MAX_PAGE:
            raise ValueError(f"page_size={page_size}: expected 1 to {MAX_PAGE}")
        self.client = client
        self.page_size = page_size

    def _pages(self, params: Mapping[str, Any]) -> Iterator[list[Mapping[str, Any]]]:
        cursor: str | None = None
        while True:
            rows, cursor = _page(
                self.client.get(OBSERVATIONS, {**params, "limit": self.page_size, "cursor": cursor})
            )
            yield rows
            if cursor is None:
                return

    def traces(self, query: TraceFilter) -> list[TraceRef]:
        """The traces ``query`` selects, oldest first (a trace with several roots once, at its first)."""
        from otel_traj.adapters.langfuse_api import timestamp_ns

        params = {"fields": "core,basic", "filter": orjson.dumps(filter_conditions(query)).decode()}
        found: dict[str, TraceRef] = {}
        for rows in self._pages(params):
            for row in rows:
                trace_id, start = row.get("traceId"), row.get("startTime")
                if not isinstance(trace_id, str) or not isinstance(start, str):
                    continue
                ref = TraceRef(trace_id, timestamp_ns(start), row.get("endTime") is not None)
                known = found.get(trace_id)
                if known is None or ref.start_ns < known.start_ns:
                    found[trace_id] = ref
        return sorted(found.values(), key=lambda ref: (ref.start_ns, ref.trace_id))

    def observations(self, trace_id: str) -> list[Mapping[str, Any]]:
        """Every observation of the trace, with what a run is rebuilt from."""
        params = {"traceId": trace_id, "fields": FIELDS, "expandMetadata": EXPANDED_METADATA}
        return [row for rows in self._pages(params) for row in rows]
