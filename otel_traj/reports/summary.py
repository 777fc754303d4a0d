"""What every report says first: how many trajectories ended with which outcome."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from otel_traj.verdict import OUTCOMES, Verdict


def outcome_counts(verdicts: Sequence[Verdict]) -> str:
    """``2 trajectories: 1 unsafe, 1 pass``."""
    counts = Counter(v.outcome for v in verdicts)
    parts = [f"{counts[o]} {o}" for o in OUTCOMES if counts[o]]
    noun = "trajectory" if len(verdicts) == 1 else "trajectories"
    return f"{len(verdicts)} {noun}" + (f": {', '.join(parts)}" if parts else "")
