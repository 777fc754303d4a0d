"""Runs read from a backend that answers a trace id with OTLP/JSON, one request a trace.

The backend is named by a URL template holding ``{trace_id}``, filled with each id (32 lowercase hex
digits): Tempo's ``http://tempo:3200/api/v2/traces/{trace_id}``, Jaeger v2's
``http://jaeger:16686/api/v3/traces/{trace_id}``, or any other path that answers the same way. The
answer is read by the OTLP/JSON adapter, whichever of the three shapes it has: an
``ExportTraceServiceRequest`` (``resourceSpans``), Tempo's query response (the trace under
``trace``, with ``status`` ``PARTIAL`` when Tempo could not gather all of it) and Jaeger's
(``result``, as its HTTP gateway wraps the stream it answers with).

A trace the backend does not know (404) is skipped; any other failure stops the reading (what was
read is graded). A run read with problems (spans the adapter could not read, a partial answer) is
not fully read, its outcome ``incomplete``.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_traj.adapters.batch import SpanBatch
from otel_traj.adapters.otlp_json import is_otlp_json, views_from_otlp_json
from otel_traj.backfill.http import PoliteClient, ReadError
from otel_traj.backfill.run import Backfilled, incomplete
from otel_traj.offline import trajectories_from_views
from otel_traj.progress import Progress

if TYPE_CHECKING:
    from otel_traj.config import AssemblerConfig

PLACEHOLDER = "{trace_id}"
SOURCE = "the OTLP/JSON backend"
_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_NOT_FOUND = 404


def split_url(url: str) -> tuple[str, str]:
    """The base (``scheme://host``) and the rest (path and query) of an http(s) URL; ``ValueError``
    when it is not one."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r}: expected an http:// or https:// URL")
    rest = urllib.parse.urlunsplit(("", "", parts.path, parts.query, ""))
    return f"{parts.scheme}://{parts.netloc}", rest.lstrip("/")


def split_template(url: str) -> tuple[str, str]:
    """The base and the path template of a URL template; ``ValueError`` when it is not an http(s)
    URL holding ``{trace_id}`` once, in its path."""
    base, rest = split_url(url)
    if rest.count(PLACEHOLDER) != 1 or PLACEHOLDER in base:
        raise ValueError(
            f"{url!r}: the URL must hold {PLACEHOLDER} once in its path, as in "
            f"http://tempo:3200/api/v2/traces/{PLACEHOLDER} (Tempo) or "
            f"http://jaeger:16686/api/v3/traces/{PLACEHOLDER} (Jaeger v2)"
        )
    return base, rest


def read_trace_ids(path: str) -> list[str]:
    """The trace ids of a file, one a line (blank lines and ``#`` comments skipped; case and
    surrounding space ignored; each id once); ``ValueError`` naming the first line that is no id."""
    ids: dict[str, None] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip().lower()
        if not text or text.startswith("#"):
            continue
        if not _TRACE_ID.fullmatch(text):
            raise ValueError(f"{path}:{number}: {line.strip()!r} is not a trace id (32 hex digits)")
        ids[text] = None
    return list(ids)


def _document(body: Any) -> tuple[Any, bool]:
    """The OTLP/JSON document of an answer, and whether the backend said it is partial."""
    partial = False
    if isinstance(body, Mapping):
        partial = str(body.get("status") or "").upper() == "PARTIAL"
        inner = body.get("result")
        if not is_otlp_json(body) and (is_otlp_json(inner) or isinstance(inner, list)):
            body = inner
    return body, partial


class OtlpJsonReader:
    """Reads traces by id from one backend through ``client`` (its base URL) and a path template."""

    def __init__(self, client: PoliteClient, path_template: str) -> None:
        self.client = client
        self.path_template = path_template

    def trace(self, trace_id: str) -> tuple[SpanBatch, list[str]]:
        """The views of one trace and the problems of reading it."""
        path = self.path_template.replace(PLACEHOLDER, trace_id)
        document, partial = _document(self.client.get(path))
        try:
            views = views_from_otlp_json(document)
        except ValueError as exc:
            raise ReadError(f"GET {path}: {exc}") from None
        problems = [f"the backend answered trace {trace_id} in part"] if partial else []
        if views.malformed:
            problems.append(f"{views.malformed} spans of trace {trace_id} could not be read")
        return views, problems


def read_otlp_runs(
    reader: OtlpJsonReader, trace_ids: list[str], *, limit: int | None, config: AssemblerConfig
) -> Backfilled:
    """The runs of the traces ``trace_ids`` names, at most ``limit`` of them (the first)."""
    out = Backfilled(listed=len(trace_ids))
    if limit is not None:
        out.skipped["over --limit"] = max(0, len(trace_ids) - limit)
        trace_ids = trace_ids[:limit]
    with Progress(len(trace_ids), "reading") as progress:
        for trace_id in trace_ids:
            progress.advance()
            try:
                views, problems = reader.trace(trace_id)
            except ReadError as exc:
                if exc.status == _NOT_FOUND:
                    out.skipped["not found"] += 1
                    continue
                out.failure = f"trace {trace_id}: {exc}"
                break
            out.read += 1
            runs = trajectories_from_views(views, config)
            if not runs:
                out.skipped["no GenAI spans"] += 1
                continue
            if problems:
                runs = [incomplete(run, problems, SOURCE) for run in runs]
                out.incomplete += len(runs)
            out.runs.extend(runs)
    out.runs.sort(key=lambda run: (run.start_ns, run.trace_id))
    return out
