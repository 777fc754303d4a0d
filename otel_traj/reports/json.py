"""JSON report: ``{"trajectories": [...]}``, each the trajectory's fields plus outcome, score, checks."""

from __future__ import annotations

import json
from collections.abc import Sequence

from otel_traj.serialize import verdict_to_dict
from otel_traj.verdict import Verdict


def render_json(verdicts: Sequence[Verdict]) -> str:
    document = {"trajectories": [verdict_to_dict(v) for v in verdicts]}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
