"""otel-traj: grade AI-agent trajectories from OpenTelemetry spans while the agents run."""

from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, ModelCall, ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Verdict

__all__ = [
    "AgentRun",
    "CheckResult",
    "ModelCall",
    "SpanView",
    "ToolCall",
    "Trajectory",
    "Verdict",
]
