"""JSON report: ``{"trajectories": [...]}``, each the trajectory's fields plus outcome, score, checks;
with conversations, ``"conversations": [...]`` beside it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from otel_traj.serialize import verdict_to_dict
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict


def render_json(
    verdicts: Sequence[Verdict], conversations: Sequence[ConversationVerdict] | None = None
) -> str:
    document: dict[str, Any] = {"trajectories": [verdict_to_dict(v) for v in verdicts]}
    if conversations is not None:
        from otel_traj.conversations.serialize import conversation_to_dict

        document["conversations"] = [conversation_to_dict(c) for c in conversations]
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
