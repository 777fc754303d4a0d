"""``compare_versions``: the release gate (``otel_traj.gate``'s rule) over the runs of the store, the
baseline's and the candidate's chosen by ``KEY=VALUE`` filters (``service_version=1.2``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from otel_traj.gate import GateInputError, decide, result_to_dict
from otel_traj.gate.runs import CaseFinder
from otel_traj.gate.stored import load_stored_side, parse_where
from otel_traj.mcp.bounds import MAX_LIMIT, clip
from otel_traj.mcp.errors import ToolInputError
from otel_traj.mcp.store import Store, since_ns


class Comparison(BaseModel):
    allowed: bool = Field(description="the release rule holds: no reason below")
    reasons: list[str] = Field(description="each reason the release is blocked")
    baseline_runs: int
    candidate_runs: int
    max_regression: float
    cases: list[dict[str, Any]] = Field(description="paired runs (by case, conversation or input)")
    cases_total: int
    unpaired: dict[str, list[str]] = Field(description="trace ids of the runs that paired with nothing")


def compare_versions(
    store: Store,
    *,
    baseline: dict[str, str],
    candidate: dict[str, str],
    since: str | None,
    max_regression: float,
) -> Comparison:
    if not baseline or not candidate:
        raise ToolInputError("baseline, candidate: each needs a filter, e.g. {'service_version': '1.2'}")
    if not max_regression >= 0:
        raise ToolInputError(f"max_regression: must be >= 0, got {max_regression}")
    start = since_ns(since)
    finder = CaseFinder(None, None)
    try:
        sides = [
            [parse_where(f"{key}={value}") for key, value in where.items()] for where in (baseline, candidate)
        ]
    except ValueError as exc:
        raise ToolInputError(str(exc)) from None
    with store.reading() as reader:
        try:
            base = load_stored_side(reader, sides[0], start, finder, "baseline")
            cand = load_stored_side(reader, sides[1], start, finder, "candidate")
        except GateInputError as exc:
            raise ToolInputError(str(exc)) from None
    result = decide(base, cand, max_regression)
    if not result.cases:
        raise ToolInputError("no candidate run pairs with a baseline run (by case, conversation or input)")
    data = result_to_dict(result)
    return Comparison(
        allowed=result.allowed,
        reasons=clip(result.reasons),
        baseline_runs=len(base),
        candidate_runs=len(cand),
        max_regression=max_regression,
        cases=clip(data["cases"][:MAX_LIMIT]),
        cases_total=len(data["cases"]),
        unpaired={side: ids[:MAX_LIMIT] for side, ids in data["unpaired"].items()},
    )
