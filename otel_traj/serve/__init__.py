"""Service mode: an OTLP receiver (gRPC and HTTP) in front of the shared grading pipeline."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from otel_traj.serve.ingest import Accepted, Ingest, InvalidRequest, Refused
from otel_traj.serve.settings import ServeSettings

if TYPE_CHECKING:
    from otel_traj.serve.service import Ports, Service

# The service module imports grpc and uvicorn; loading it on first use keeps them out of a process
# that only reads settings or feeds an ``Ingest`` (the CLI's other commands, benchmarks, tests).
_LAZY = {"Ports": "otel_traj.serve.service", "Service": "otel_traj.serve.service"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Accepted", "Ingest", "InvalidRequest", "Ports", "Refused", "ServeSettings", "Service"]
