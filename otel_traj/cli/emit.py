"""``--emit-otel URL`` of ``grade``: the verdicts as ``gen_ai.evaluation.result`` events, exported
over OTLP/HTTP before the command exits."""

from __future__ import annotations

from collections.abc import Sequence

from otel_traj.conversations import ConversationVerdict
from otel_traj.policy import Policy
from otel_traj.sinks.otel_events import EvaluationEventSink
from otel_traj.verdict import Verdict

# A command line waits this long for the receiver; what is not delivered by then is reported.
TIMEOUT_MS = 30_000


def emit_events(
    url: str,
    verdicts: Sequence[Verdict],
    conversations: Sequence[ConversationVerdict] | None,
    policy: Policy | None,
) -> str:
    """Export and return a one-line summary of the delivery."""
    sink = EvaluationEventSink(
        endpoint=url,
        max_queue=max(1, len(verdicts) + len(conversations or ())),
        redact=policy.is_sensitive if policy is not None else None,
        policy=policy,
    )
    for verdict in verdicts:
        sink.export(verdict)
    for conversation in conversations or ():
        sink.export_conversation(conversation)
    delivered = sink.force_flush(TIMEOUT_MS)
    sink.shutdown(0 if not delivered else TIMEOUT_MS)
    records = sum(len(v.checks) + 1 for v in verdicts) + sum(len(c.checks) + 1 for c in conversations or ())
    lost = sum(sink.stats.snapshot().dropped.values()) + sum(sink.stats.snapshot().sink_errors.values())
    target = url.rstrip("/") + "/v1/logs"
    if lost or not delivered:
        return f"{records} records for {len(verdicts)} verdicts to {target}: not all delivered ({lost} lost)"
    return f"{records} records to {target}"
