"""Trace files: detect the format by content, decode to SpanViews, and say clearly what went wrong.

Understood (and gzip- or zstd-compressed versions of each): an OTLP protobuf
``ExportTraceServiceRequest``; a stream of them each prefixed with a 4-byte big-endian length (the
Collector file exporter's ``format: proto``); OTLP/JSON as one request, a list of them or JSON Lines
(the Collector file exporter's default); Grafana Tempo exports; Jaeger JSON (query API, UI download,
v3 API). With ``compression: zstd`` the file exporter compresses every request on its own and
length-prefixes the result, in either format: such streams are read too.

Two kinds of trouble are kept apart. A file that cannot be read as traces at all raises
``TraceFileError`` naming the file and the reason. Single spans inside a readable file that lack ids
or carry wrongly typed fields are counted in ``malformed``: one bad span must not hide the rest of a
run. One whose trace id could be read stays in its trace as a ``MalformedSpan`` whose reason names
the file and what was wrong, so that its run is graded as not fully read.
"""

from __future__ import annotations

import codecs
import gzip
import json
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_traj.adapters import zstd
from otel_traj.adapters.batch import SpanBatch
from otel_traj.adapters.jaeger import is_jaeger_json, views_from_jaeger
from otel_traj.adapters.log_events import LogEvents, attach, events_from_otlp_json, is_otlp_logs_json
from otel_traj.adapters.otlp_json import is_otlp_json, views_from_otlp_json
from otel_traj.spanview import MalformedSpan

# What directory expansion picks up; files named explicitly are read whatever their name.
TRACE_FILE_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson", ".pb", ".otlp", ".bin", ".gz", ".zst"})
_GZIP_MAGIC = b"\x1f\x8b"

_SHAPE_KEYS = "resourceSpans, batches, data, trace"
_JSON_TYPES = {str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


class TraceFileError(ValueError):
    """A file that cannot be read as traces. ``str()`` is ``"<path>: <reason>"``."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason

    def __reduce__(self) -> tuple[type[TraceFileError], tuple[Path, str]]:
        # Raised in a worker process (``grade --jobs``) and pickled back to the parent.
        return type(self), (self.path, self.reason)


class NotATraceFileError(TraceFileError):
    """Readable content of another kind (JSON without trace data, say), as opposed to a broken file."""


class _Unreadable(Exception):
    def __init__(self, reason: str, *, other_content: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.other_content = other_content


@dataclass(slots=True)
class TraceFile:
    """What one file held. ``format`` names the container, e.g. ``otlp-protobuf``, ``jaeger (gzip)``;
    ``events``: GenAI content events from OTLP/JSON log records (see ``log_events``), by span."""

    path: Path
    format: str
    views: SpanBatch
    events: LogEvents = field(default_factory=LogEvents)

    @property
    def malformed(self) -> int:
        return self.views.malformed


def _json_shape(doc: Any) -> str:
    if is_otlp_json(doc):
        return "tempo" if "batches" in doc or "trace" in doc else "otlp-json"
    if is_jaeger_json(doc):
        return "jaeger"
    return ""


def views_from_json(doc: Any) -> tuple[SpanBatch, str]:
    """Views and the shape name of one parsed JSON document of any supported kind."""
    shape = _json_shape(doc)
    if shape == "jaeger":
        return views_from_jaeger(doc), shape
    if shape:
        return views_from_otlp_json(doc), shape
    if isinstance(doc, list):
        batch = SpanBatch()
        shapes = [_json_shape(item) for item in doc]
        if doc and not any(shapes):
            raise _Unreadable("not a trace file: JSON array holds no trace objects", other_content=True)
        for item, item_shape in zip(doc, shapes, strict=True):
            if item_shape:
                batch.extend_batch(views_from_json(item)[0])
            else:
                batch.malformed += 1
        return batch, next((s for s in shapes if s), "otlp-json")
    if isinstance(doc, Mapping):
        raise _Unreadable(f"not a trace file: JSON object has none of {_SHAPE_KEYS}", other_content=True)
    kind = _JSON_TYPES.get(type(doc), "value")
    raise _Unreadable(f"not a trace file: a JSON {kind}, not a trace object", other_content=True)


def _json_documents(text: str) -> Iterator[Any]:
    """Every JSON value in ``text``: one document, JSON Lines, or documents simply concatenated."""
    decoder = json.JSONDecoder()
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos == end:
            return
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise _Unreadable(f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
        except RecursionError:
            raise _Unreadable("invalid JSON: nested too deeply") from None
        except ValueError as exc:
            # An integer longer than Python converts from a string (``sys.get_int_max_str_digits``).
            raise _Unreadable(f"invalid JSON: {exc}") from None
        yield doc


# What one file or frame decoded to: its views, the shape of its content, the events of its log records.
_Decoded = tuple[SpanBatch, str, LogEvents]


def _json_document(doc: Any) -> _Decoded:
    if not is_otlp_logs_json(doc):
        views, shape = views_from_json(doc)
        return views, shape, LogEvents()
    events = events_from_otlp_json(doc)
    if not _json_shape(doc):
        return SpanBatch(), "otlp-json logs", events
    # One document may hold both signals (a run's spans and its log records saved together, as
    # agentevals downloads a session): neither is left out.
    views, shape = views_from_json(doc)
    return views, f"{shape} and logs", events


def _read_json(data: bytes) -> _Decoded:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        reason = f"neither OTLP protobuf nor UTF-8 JSON (invalid byte at offset {exc.start})"
        raise _Unreadable(reason) from None
    batch, shapes, events = _joined(_json_document(doc) for doc in _json_documents(text))
    if not shapes:
        raise _Unreadable("empty file")
    return batch, shapes[0] + (" lines" if len(shapes) > 1 else ""), events


def _joined(parts: Iterable[_Decoded]) -> tuple[SpanBatch, list[str], LogEvents]:
    """The views and events of several documents of one file as one, and each document's shape."""
    batch = SpanBatch()
    shapes: list[str] = []
    events = LogEvents()
    for views, shape, found in parts:
        batch.extend_batch(views)
        shapes.append(shape)
        events.extend(found)
    return batch, shapes, events


def _delimited_frames(data: bytes) -> list[bytes] | None:
    """The messages of a length-prefixed stream, or ``None`` if ``data`` is not exactly one."""
    frames, pos = [], 0
    while pos < len(data):
        if len(data) - pos < 4:
            return None
        size = int.from_bytes(data[pos : pos + 4])
        if pos + 4 + size > len(data):
            return None
        frames.append(data[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return frames


def _read_zstd_frames(frames: list[bytes]) -> _Decoded:
    """The file exporter with ``compression: zstd``: each frame one compressed request, protobuf or JSON."""
    batch, shapes, events = _joined(_decode(_unzstd(frame)) for frame in frames)
    return batch, f"{shapes[0]} delimited (zstd)", events


def _read_protobuf(data: bytes) -> _Decoded:
    # Here, not at import: reading JSON files never loads protobuf.
    from google.protobuf.message import DecodeError

    from otel_traj.adapters.otlp_proto import parse_request, views_from_request

    # A plain request starts with field 1 (resource_spans, tag 0x0A); a length prefix of a message
    # under 16 MiB starts with a zero byte.
    frames = _delimited_frames(data) if data[:1] == b"\x00" else None
    if frames and all(frame[:4] == zstd.MAGIC for frame in frames):
        return _read_zstd_frames(frames)
    batch = SpanBatch()
    try:
        for frame in frames if frames is not None else [data]:
            request = parse_request(frame)
            if not request.resource_spans:
                raise _Unreadable("not a trace file: binary content is not an OTLP trace export request")
            batch.extend_batch(views_from_request(request))
    except DecodeError as exc:
        raise _Unreadable(f"neither OTLP protobuf nor JSON ({exc})") from None
    return batch, "otlp-protobuf" + (" delimited" if frames is not None else ""), LogEvents()


def _looks_like_text(data: bytes) -> bool:
    head = data[:4096]
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not merely a character cut at the 4 KiB boundary
            return False
    return all(byte >= 0x20 or byte in b"\t\r\n" for byte in head)


def _decode(data: bytes) -> _Decoded:
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    head = data.lstrip(b" \t\r\n")[:1]
    if not head:
        raise _Unreadable("empty file")
    # JSON first when it looks like JSON, but either way the other reader gets a chance: "\n{" also
    # starts a protobuf request whose first resource_spans is 123 bytes long.
    first, second = (_read_json, _read_protobuf) if head in (b"{", b"[") else (_read_protobuf, _read_json)
    try:
        return first(data)
    except _Unreadable as exc:
        first_error = exc
    try:
        return second(data)
    except _Unreadable as exc:
        json_error, protobuf_error = (first_error, exc) if first is _read_json else (exc, first_error)
    raise json_error if _looks_like_text(data) else protobuf_error


def _gunzip(data: bytes) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise _Unreadable(f"invalid gzip data: {exc}") from None


def _unzstd(data: bytes) -> bytes:
    try:
        return zstd.decompress(data)
    except zstd.ZstdDataError as exc:
        raise _Unreadable(f"invalid zstd data: {exc}") from None


def read_trace_file(path: str | Path) -> TraceFile:
    """Read one trace file of any supported format; raises ``TraceFileError`` if it is not one."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceFileError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        if data[:2] == _GZIP_MAGIC:
            views, shape, events = _decode(_gunzip(data))
            shape += " (gzip)"
        elif data[:4] == zstd.MAGIC:
            views, shape, events = _decode(_unzstd(data))
            shape += " (zstd)"
        else:
            views, shape, events = _decode(data)
    except _Unreadable as exc:
        error = NotATraceFileError if exc.other_content else TraceFileError
        raise error(path, exc.reason) from None
    if views.malformed:
        for view in views:
            if isinstance(view, MalformedSpan):
                view.reason = f"{path}: malformed span: {view.reason}"
    return TraceFile(path, shape, views, events)


# Installed JavaScript packages: never searched for traces.
PACKAGE_DIR = "node_modules"


def expand_paths(
    paths: Iterable[str | Path], ignored: list[Path] | None = None
) -> Iterator[tuple[Path, bool]]:
    """Each file to read, and whether it was named explicitly (rather than found in a directory).

    Directories are searched recursively, in sorted order, for files with a trace file suffix; the
    files found there without one are appended to ``ignored`` when it is given. ``node_modules``
    directories inside them are not searched: installed packages hold JSON files (some not even
    JSON: ``tsconfig.json`` with comments) but no traces.
    """
    for entry in paths:
        path = Path(entry)
        if path.is_dir():
            found = (
                p
                for p in path.rglob("*")
                if p.is_file() and PACKAGE_DIR not in p.relative_to(path).parts[:-1]
            )
            for file in sorted(found):
                if file.suffix.lower() in TRACE_FILE_SUFFIXES:
                    yield file, False
                elif ignored is not None:
                    ignored.append(file)
        else:
            yield path, True


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file that was passed over, and why (``reason`` reads after ``"<path>: "``)."""

    path: Path
    reason: str


@dataclass(slots=True)
class TraceInputs:
    """What a set of paths held: every span once (``views``, each with the GenAI content events that
    log records among the files hold for it), each file read and each passed over; ``unattached``:
    content events whose span is in none of the files."""

    views: SpanBatch
    files: list[TraceFile]
    skipped: list[SkippedFile]
    unattached: int = 0


def read_trace_inputs(paths: Iterable[str | Path]) -> TraceInputs:
    """Like ``read_trace_files``, and also says which files were read and which were passed over.

    Passed over: files found in a directory without a trace file suffix, and files found in a
    directory that hold some other kind of JSON (a facts or config file next to the traces).
    """
    ignored: list[Path] = []
    inputs = read_files(expand_paths(paths, ignored))
    inputs.skipped.extend(ignored_files(ignored))
    inputs.skipped.sort(key=lambda s: s.path)
    return inputs


def ignored_files(ignored: Iterable[Path]) -> list[SkippedFile]:
    """The files ``expand_paths`` passed over for their name."""
    suffixes = ", ".join(sorted(TRACE_FILE_SUFFIXES))
    return [SkippedFile(path, f"not a trace file name (suffix is none of {suffixes})") for path in ignored]


def read_files(entries: Iterable[tuple[Path, bool]]) -> TraceInputs:
    """:func:`read_trace_inputs` of files ``expand_paths`` gave (each with whether it was named
    explicitly: only those raise ``NotATraceFileError``); ``skipped`` sorted by path."""
    batch = SpanBatch()
    files: list[TraceFile] = []
    skipped: list[SkippedFile] = []
    seen: dict[tuple[int, int], int] = {}
    for path, explicit in entries:
        try:
            file = read_trace_file(path)
        except NotATraceFileError as exc:
            if explicit:
                raise
            skipped.append(SkippedFile(path, exc.reason))
            continue
        files.append(file)
        batch.malformed += file.malformed
        for view in file.views:
            batch.append_once(view, seen)
    skipped.sort(key=lambda s: s.path)
    events = LogEvents()
    for file in files:
        events.extend(file.events)
    if not events.by_span:
        return TraceInputs(batch, files, skipped)
    views, unattached = attach(batch, events)
    return TraceInputs(SpanBatch(views, batch.malformed, batch.duplicates), files, skipped, unattached)


def read_trace_files(paths: Iterable[str | Path]) -> SpanBatch:
    """All views of all files (directories expanded), each span once.

    A span read before from another file (same trace and span id) is counted in ``duplicates`` and
    left out. Any unreadable file raises ``TraceFileError``, except that files found in a directory
    which hold some other kind of JSON (a facts or config file next to the traces) are passed over.
    """
    return read_trace_inputs(paths).views
