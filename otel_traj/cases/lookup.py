"""Which golden case a trajectory is a run of.

In order: a configured attribute whose value is the case id (an eval harness can tag its runs, e.g.
``eval.case_id``; a case may name its own with ``match_on``), the conversation id equal to the case id,
then the user's input: equal after normalizing whitespace and case, else one containing the other
(the longest case input wins, so a specific case beats a generic one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from otel_traj.cases.model import GoldenCase
from otel_traj.trajectory import Trajectory

MatchedBy = Literal["attribute", "conversation_id", "input", "input_contains"]


@dataclass(frozen=True, slots=True)
class CaseMatch:
    case: GoldenCase
    matched_by: MatchedBy


def normalize_text(text: str) -> str:
    return " ".join(text.split()).casefold()


def find_case(
    trajectory: Trajectory, cases: Sequence[GoldenCase], match_on: str | None = None
) -> CaseMatch | None:
    """The case this trajectory is a run of, or None. ``match_on`` is the attribute for every case
    that does not name its own."""
    for case in cases:
        attribute = case.match_on or match_on
        if attribute is None:
            continue
        value = trajectory.attributes.get(attribute)
        if value is not None and str(value).strip() == case.case_id:
            return CaseMatch(case, "attribute")
    if trajectory.conversation_id:
        for case in cases:
            if trajectory.conversation_id == case.case_id:
                return CaseMatch(case, "conversation_id")
    if not trajectory.user_input or not trajectory.user_input.strip():
        return None
    user = normalize_text(trajectory.user_input)
    for case in cases:
        if normalize_text(case.input) == user:
            return CaseMatch(case, "input")
    containing = [
        case for case in cases if (text := normalize_text(case.input)) and (text in user or user in text)
    ]
    if not containing:
        return None
    return CaseMatch(max(containing, key=lambda c: len(c.input)), "input_contains")
