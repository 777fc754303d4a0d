"""The runs of one side of a release gate, read from ``otel-traj grade`` JSON or from trace files.

Both kinds of input become the same :class:`Run`: trace files are graded (with the policy, if any)
and serialized exactly as ``grade --format json`` writes them, then read back like a JSON report, so
a side may mix the two.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_traj.verdict import OUTCOMES

if TYPE_CHECKING:
    from otel_traj.cases.model import GoldenCase
    from otel_traj.policy import Policy

# The efficiency figures compared, in the order reports show them: (key, JSON field, label).
FIGURES: tuple[tuple[str, str, str], ...] = (
    ("tool_calls", "tool_calls", "tool calls"),
    ("model_turns", "model_turns", "model turns"),
    ("total_tokens", "total_tokens", "tokens"),
    ("cost_usd", "total_cost_usd", "cost $"),
    ("duration_s", "duration_s", "duration s"),
)
OUTCOME_NAMES = frozenset(OUTCOMES)
PASSING = frozenset({"pass", "pass_with_warnings"})
# Checks whose failures the gate counts run by run (``critical`` failures also make a run unsafe).
BLOCKING_SEVERITIES = frozenset({"critical", "error"})


class GateInputError(ValueError):
    """An input the gate cannot read; the message names the file, the field and the problem."""


@dataclass(slots=True, frozen=True)
class Run:
    trace_id: str
    source: str
    outcome: str
    # Names (with severity) of the checks of severity error or critical that failed.
    failed: tuple[tuple[str, str], ...]
    figures: Mapping[str, float | None]
    case_id: str | None = None
    conversation_id: str | None = None
    user_input: str | None = None

    @property
    def passed(self) -> bool:
        return self.outcome in PASSING


def _field(
    data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str, optional: bool = False
) -> Any:
    value = data.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise GateInputError(f"{where}: field {key!r} must be {expected}, got {value!r}")
    return value


def run_from_dict(
    data: Any, source: str, index: int, case_of: Callable[[Mapping[str, Any]], str | None]
) -> Run:
    """One entry of a ``grade --format json`` report."""
    where = f"{source}: trajectories[{index}]"
    if not isinstance(data, Mapping):
        raise GateInputError(f"{where}: must be an object, got {type(data).__name__}")
    outcome = _field(data, "outcome", str, where)
    if outcome not in OUTCOME_NAMES:
        raise GateInputError(
            f"{where}: field 'outcome' must be one of {', '.join(sorted(OUTCOME_NAMES))}, got {outcome!r}"
        )
    failed: list[tuple[str, str]] = []
    for i, check in enumerate(_field(data, "checks", list, where)):
        check_where = f"{where}.checks[{i}]"
        if not isinstance(check, Mapping):
            raise GateInputError(f"{check_where}: must be an object, got {type(check).__name__}")
        if _field(check, "status", str, check_where) == "fail":
            severity = _field(check, "severity", str, check_where)
            if severity in BLOCKING_SEVERITIES:
                failed.append((_field(check, "name", str, check_where), severity))
    tools = _field(data, "tool_calls", list, where)
    figures: dict[str, float | None] = {
        "tool_calls": float(sum(1 for t in tools if not isinstance(t, Mapping) or t.get("kind") != "output")),
        "model_turns": float(_field(data, "model_turns", int, where)),
        "total_tokens": float(_field(data, "total_tokens", int, where)),
        "cost_usd": _field(data, "total_cost_usd", (int, float), where, optional=True),
        "duration_s": float(_field(data, "duration_s", (int, float), where)),
    }
    return Run(
        trace_id=_field(data, "trace_id", str, where),
        source=source,
        outcome=outcome,
        failed=tuple(failed),
        figures=figures,
        case_id=case_of(data),
        conversation_id=_field(data, "conversation_id", str, where, optional=True),
        user_input=_field(data, "user_input", str, where, optional=True),
    )


def _grade_report(path: Path) -> list[Any] | None:
    """The ``trajectories`` of a ``grade --format json`` report, or None when the file is no such report."""
    if path.suffix != ".json" or not path.is_file():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(document, dict) or "trajectories" not in document:
        return None
    entries = document["trajectories"]
    if not isinstance(entries, list):
        raise GateInputError(f"{path}: field 'trajectories' must be a list, got {type(entries).__name__}")
    return entries


class CaseFinder:
    """The golden case id of a run (``cases.lookup.find_case``), from the fields a verdict's JSON keeps."""

    def __init__(self, cases: Sequence[GoldenCase] | None, match_on: str | None) -> None:
        self.cases = cases
        self.match_on = match_on

    def __call__(self, data: Mapping[str, Any]) -> str | None:
        if not self.cases:
            return None
        from otel_traj.cases.lookup import find_case
        from otel_traj.trajectory import Trajectory

        attributes = data.get("attributes")
        conversation, user = data.get("conversation_id"), data.get("user_input")
        probe = Trajectory(
            trace_id=0,
            attributes=dict(attributes) if isinstance(attributes, Mapping) else {},
            conversation_id=conversation if isinstance(conversation, str) else None,
            user_input=user if isinstance(user, str) else None,
        )
        found = find_case(probe, self.cases, self.match_on)
        return found.case.case_id if found is not None else None


def _graded_from_traces(
    paths: list[str], policy: Policy | None, finder: CaseFinder, jobs: int | None
) -> list[tuple[str, dict[str, Any]]]:
    """Grade the runs in trace files as ``otel-traj grade`` does; (file, verdict JSON) per run."""
    from otel_traj.adapters import TraceFileError
    from otel_traj.offline import grade_runs, read_runs
    from otel_traj.serialize import verdict_to_dict

    cases = finder.cases or None
    try:
        runs = read_runs(paths, policy=policy, cases=cases, match_on=finder.match_on, jobs=jobs)
    except TraceFileError as exc:
        raise GateInputError(str(exc)) from None
    graded = grade_runs(runs, policy=policy, cases=cases, match_on=finder.match_on)
    files = {trace_id: str(file.path) for file in runs.inputs.files for trace_id in file.span_traces}
    return [(files.get(v.trajectory.trace_id, ", ".join(paths)), verdict_to_dict(v)) for v in graded.verdicts]


def load_side(
    paths: Sequence[str], policy: Policy | None, finder: CaseFinder, side: str, jobs: int | None = 1
) -> list[Run]:
    """Every run of one side; raises :class:`GateInputError` on unreadable input or a side with no run.
    ``jobs``: worker processes reading its trace files (``read_runs``)."""
    runs: list[Run] = []
    traces: list[str] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise GateInputError(f"{raw}: no such file or directory")
        entries = _grade_report(path)
        if entries is None:
            traces.append(raw)
            continue
        runs.extend(run_from_dict(entry, raw, i, finder) for i, entry in enumerate(entries))
    if traces:
        graded = _graded_from_traces(traces, policy, finder, jobs)
        runs.extend(run_from_dict(data, source, i, finder) for i, (source, data) in enumerate(graded))
    if not runs:
        raise GateInputError(f"--{side}: no run found in {', '.join(paths)}")
    return runs
