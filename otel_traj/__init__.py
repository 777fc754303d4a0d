"""otel-traj: grade AI-agent trajectories from OpenTelemetry spans while the agents run."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from otel_traj.adapters import TraceFileError, read_trace_file, read_trace_files
    from otel_traj.checks.custom import CheckConfig, CustomCheck
    from otel_traj.grader import Grader
    from otel_traj.policy import Policy, PolicyError, load_policy
    from otel_traj.processor import TrajectoryProcessor
    from otel_traj.sampling import RecordAllSampler
    from otel_traj.spanview import SpanView
    from otel_traj.steps import AgentRun, ModelCall, ToolCall
    from otel_traj.trajectory import Trajectory
    from otel_traj.verdict import CheckResult, Verdict

# Each public name and the module that defines it. They load on first use, so a process that only
# needs one part (the CLI's ``--version`` or ``policy check``) does not pay for pydantic, the
# OpenTelemetry SDK, protobuf and the grader together.
_LAZY = {
    "AgentRun": "otel_traj.steps",
    "CheckConfig": "otel_traj.checks.custom",
    "CheckResult": "otel_traj.verdict",
    "CustomCheck": "otel_traj.checks.custom",
    "Grader": "otel_traj.grader",
    "ModelCall": "otel_traj.steps",
    "Policy": "otel_traj.policy",
    "PolicyError": "otel_traj.policy",
    "RecordAllSampler": "otel_traj.sampling",
    "SpanView": "otel_traj.spanview",
    "ToolCall": "otel_traj.steps",
    "TraceFileError": "otel_traj.adapters",
    "Trajectory": "otel_traj.trajectory",
    "TrajectoryProcessor": "otel_traj.processor",
    "Verdict": "otel_traj.verdict",
    "load_policy": "otel_traj.policy",
    "read_trace_file": "otel_traj.adapters",
    "read_trace_files": "otel_traj.adapters",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups find it without coming back here
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "AgentRun",
    "CheckConfig",
    "CheckResult",
    "CustomCheck",
    "Grader",
    "ModelCall",
    "Policy",
    "PolicyError",
    "RecordAllSampler",
    "SpanView",
    "ToolCall",
    "TraceFileError",
    "Trajectory",
    "TrajectoryProcessor",
    "Verdict",
    "load_policy",
    "read_trace_file",
    "read_trace_files",
]
