"""Release gate: compare a candidate's graded runs with a baseline's (``otel-traj gate``)."""

from otel_traj.gate.decision import Case, GateResult, decide, pair, result_to_dict
from otel_traj.gate.runs import CaseFinder, GateInputError, Run, load_side

__all__ = [
    "Case",
    "CaseFinder",
    "GateInputError",
    "GateResult",
    "Run",
    "decide",
    "load_side",
    "pair",
    "result_to_dict",
]
