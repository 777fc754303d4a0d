"""Service mode: an OTLP receiver (gRPC and HTTP) in front of the shared grading pipeline."""

from otel_traj.serve.ingest import Accepted, Ingest, InvalidRequest, Refused
from otel_traj.serve.service import Ports, Service
from otel_traj.serve.settings import ServeSettings

__all__ = ["Accepted", "Ingest", "InvalidRequest", "Ports", "Refused", "ServeSettings", "Service"]
