"""otel-traj: grade AI-agent trajectories from OpenTelemetry spans while the agents run."""

from otel_traj.adapters import TraceFileError, read_trace_file, read_trace_files
from otel_traj.grader import Grader
from otel_traj.policy import Policy, PolicyError, load_policy
from otel_traj.processor import TrajectoryProcessor
from otel_traj.sampling import RecordAllSampler
from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, ModelCall, ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Verdict

__all__ = [
    "AgentRun",
    "CheckResult",
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
