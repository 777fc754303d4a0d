"""Offline publishing: verdicts graded from files (``otel-traj grade --langfuse``) sent to Langfuse."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING

from otel_traj.sinks.langfuse import LangfuseSink
from otel_traj.sinks.langfuse_scores import DeliveryReport
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict


def send_verdicts(
    verdicts: Iterable[Verdict],
    sink: LangfuseSink | None = None,
    timeout: float = 30.0,
    redact: Callable[[str, str], bool] | Collection[str] | None = None,
    conversations: Iterable[ConversationVerdict] = (),
) -> DeliveryReport:
    """Publish offline verdicts (``otel-traj grade --langfuse``), then the ``conversations``' session
    scores, and wait up to ``timeout`` seconds.

    With no ``sink`` one is configured from the environment (and ``redact``, e.g. the policy's
    ``is_sensitive``) and shut down afterwards; a missing key raises ``ValueError``.
    """
    own = sink is None
    active = sink if sink is not None else LangfuseSink(redact=redact)
    deadline = time.monotonic() + timeout
    before = active.report()

    def make_room() -> None:
        # Offline input can exceed the queue: wait for room rather than drop the oldest scores.
        if active.report().pending >= active.max_queue // 2:
            active.force_flush(int(max(0.0, deadline - time.monotonic()) * 1000))

    for verdict in verdicts:
        make_room()
        active.export(verdict)
    for conversation in conversations:
        make_room()
        active.export_conversation(conversation)
    active.force_flush(int(max(0.0, deadline - time.monotonic()) * 1000))
    if own:
        active.shutdown(timeout_millis=int(max(0.0, deadline - time.monotonic()) * 1000))
    return active.report().since(before)


__all__ = ["send_verdicts"]
