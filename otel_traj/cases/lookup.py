"""Which golden case a trajectory is a run of.

In order: a configured attribute whose value is the case id (an eval harness can tag its runs, e.g.
``eval.case_id``; a case may name its own with ``match_on``), the conversation id equal to the case id,
then the user's input: equal after normalizing whitespace and case, else containing the case input
as whole words (a harness wrapped it) or being a long prefix of it (the capture was truncated); the
longest case input wins, so a specific case beats a generic one.
"""

from __future__ import annotations

import re
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


# A captured input shorter than this is too generic to stand for a truncated case input.
_MIN_PREFIX = 32


def _contains(user: str, case_text: str) -> bool:
    """The case input appears in the user's input as whole words (a harness wrapped it), or the
    user's input is a long prefix of the case input (the instrumentation truncated it)."""
    if not case_text:
        return False
    if re.search(rf"(?<!\w){re.escape(case_text)}(?!\w)", user):
        return True
    return len(user) >= _MIN_PREFIX and case_text.startswith(user)


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
    containing = [case for case in cases if _contains(user, normalize_text(case.input))]
    if not containing:
        return None
    return CaseMatch(max(containing, key=lambda c: len(c.input)), "input_contains")
