"""Trace ids found by a backend's search endpoint, for ``backfill --from otlp-json URL --search URL``.

The search URL is asked once (``GET``) and its answer walked for the values of the keys backends
name trace ids with: ``traceID`` (Tempo's ``/api/search``: ``{"traces": [{"traceID": ...}]}``;
Jaeger's ``/api/traces``: ``{"data": [{"traceID": ...}]}``), ``traceId`` (OTLP/JSON, as Jaeger v2's
``/api/v3/traces`` answers a search with whole traces) and ``trace_id``. Tempo leaves out a trace id's
leading zeros and Jaeger's 64-bit ids have 16 digits: an id of fewer than 32 hex digits is padded on
the left. Ids come out in the order the answer first gives them, each once.

The time window is the URL's: ``{since}`` and ``{until}`` in it are replaced by ``--since`` and
``--until`` in Unix seconds (Tempo's ``start`` and ``end``), ``{since_rfc3339}`` and
``{until_rfc3339}`` by the same times as RFC 3339 in UTC (Jaeger v2's ``query.start_time_min`` and
``query.start_time_max``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping
from typing import Any

from otel_traj.backfill.http import PoliteClient, ReadError

_ID_KEYS = frozenset({"traceid", "trace_id"})
_HEX_ID = re.compile(r"[0-9a-f]{1,32}")
_WINDOW = re.compile(r"\{(since|until)(_rfc3339)?\}")
# The keys a search answer that matched nothing still has (Tempo's, Jaeger's, Jaeger v2's).
_RESULT_KEYS = ("traces", "data", "result")
_NOT_FOUND = 404
# How deep an answer is walked: the shapes above nest ids four levels down.
_MAX_DEPTH = 12


def fill_window(url: str, since_ns: int | None, until_ns: int | None) -> str:
    """``url`` with its window placeholders replaced; ``ValueError`` naming a placeholder whose
    time was not given."""
    times = {"since": since_ns, "until": until_ns}

    def replace(match: re.Match[str]) -> str:
        name, rfc3339 = match.group(1), match.group(2)
        at_ns = times[name]
        if at_ns is None:
            raise ValueError(f"the search URL holds {match.group(0)}: give --{name}")
        if rfc3339:
            seconds, rest_ns = divmod(at_ns, 1_000_000_000)
            when = dt.datetime.fromtimestamp(seconds, tz=dt.UTC) + dt.timedelta(microseconds=rest_ns // 1000)
            return when.isoformat(timespec="microseconds").replace("+00:00", "Z")
        return str(at_ns // 1_000_000_000)

    return _WINDOW.sub(replace, url)


def window_placeholders(url: str) -> set[str]:
    """The window names (``since``, ``until``) the URL holds a placeholder for."""
    return {match.group(1) for match in _WINDOW.finditer(url)}


def trace_ids_in(answer: Any) -> list[str]:
    """The trace ids of a search answer, 32 lowercase hex digits each, in first-seen order."""
    ids: dict[str, None] = {}
    for value in _id_values(answer, 0):
        text = value.strip().lower()
        if _HEX_ID.fullmatch(text) and text.strip("0"):
            ids[text.rjust(32, "0")] = None
    return list(ids)


def _id_values(node: Any, depth: int) -> Iterator[str]:
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(key, str) and key.lower() in _ID_KEYS and isinstance(value, str):
                yield value
            else:
                yield from _id_values(value, depth + 1)
    elif isinstance(node, list):
        for item in node:
            yield from _id_values(item, depth + 1)


def search_trace_ids(client: PoliteClient, path: str) -> list[str]:
    """The trace ids ``GET path`` answers (none for a 404, as Jaeger answers a search that matched
    nothing); ``ReadError`` when the search cannot be had or its answer is no search answer."""
    try:
        answer = client.get(path)
    except ReadError as exc:
        if exc.status == _NOT_FOUND:
            return []
        raise
    ids = trace_ids_in(answer)
    if not ids and not (isinstance(answer, Mapping) and any(key in answer for key in _RESULT_KEYS)):
        raise ReadError(f"GET {path}: the answer is no search answer (no traceID, traceId or trace_id)")
    return ids
