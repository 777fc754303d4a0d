"""Adapters: every input format becomes ``SpanView``s, the only span type the pipeline sees.

- ``from_readable_span``: an SDK span, in-process (no copies).
- ``views_from_request`` / ``views_from_bytes``: OTLP protobuf (files, the network receiver).
- ``views_from_otlp_json``: parsed OTLP/JSON, Tempo exports included.
- ``views_from_jaeger``: parsed Jaeger JSON.
- ``read_trace_file`` / ``read_trace_files``: files of any of these, detected by content.

Decoders return a ``SpanBatch``: a list of views whose ``malformed`` attribute counts the spans that
were skipped because they could not be read.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from otel_traj.adapters.batch import SpanBatch
from otel_traj.adapters.files import (
    NotATraceFileError,
    TraceFile,
    TraceFileError,
    expand_paths,
    read_trace_file,
    read_trace_files,
)
from otel_traj.adapters.jaeger import views_from_jaeger
from otel_traj.adapters.otlp_json import views_from_otlp_json

if TYPE_CHECKING:
    from otel_traj.adapters.otlp_proto import views_from_bytes, views_from_request
    from otel_traj.adapters.sdk import from_readable_span

# Loaded on first use: protobuf and the OpenTelemetry SDK are not needed to read JSON files.
_LAZY = {
    "views_from_bytes": "otel_traj.adapters.otlp_proto",
    "views_from_request": "otel_traj.adapters.otlp_proto",
    "from_readable_span": "otel_traj.adapters.sdk",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "NotATraceFileError",
    "SpanBatch",
    "TraceFile",
    "TraceFileError",
    "expand_paths",
    "from_readable_span",
    "read_trace_file",
    "read_trace_files",
    "views_from_bytes",
    "views_from_jaeger",
    "views_from_otlp_json",
    "views_from_request",
]
