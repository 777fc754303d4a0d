"""Every settings object and every component taking a limit refuses a bad value when it is made, with
a ValueError naming the field and the value (a zero cap or a NaN wait would drop or stall every run
later, far from the mistake)."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Callable
from typing import Any

import pytest

from otel_traj.adapters.log_events import PendingEvents
from otel_traj.config import AssemblerConfig
from otel_traj.conversations import Conversations
from otel_traj.progress import Progress
from otel_traj.records import RecordMaker
from otel_traj.serve.settings import ServeSettings
from otel_traj.sinks.prometheus import LabelBudget, PrometheusSink
from otel_traj.throttle import Throttle

NAN = float("nan")
SECONDS = "a finite number of seconds >= 0"
POSITIVE = "a finite number of seconds > 0"

CASES: list[tuple[str, Callable[[], object], str]] = [
    ("late_memory=-1", lambda: AssemblerConfig(late_memory=-1), "an integer >= 0"),
    ("max_event_bytes=-1", lambda: AssemblerConfig(max_event_bytes=-1), "an integer >= 0"),
    ("max_traces=True", lambda: AssemblerConfig(max_traces=True), "an integer >= 1"),
    ("grpc_port=70000", lambda: ServeSettings(grpc_port=70000), "a port from 0 to 65535"),
    ("metrics_port=-1", lambda: ServeSettings(metrics_port=-1), "a port from 0 to 65535"),
    ("max_request_bytes=0", lambda: ServeSettings(max_request_bytes=0), "an integer >= 1"),
    ("store_queue=0", lambda: ServeSettings(store_queue=0), "an integer >= 1"),
    ("grpc_workers=0", lambda: ServeSettings(grpc_workers=0), "an integer >= 1"),
    ("retry_after_s=nan", lambda: ServeSettings(retry_after_s=NAN), SECONDS),
    ("retry_after_s=-1.0", lambda: ServeSettings(retry_after_s=-1.0), SECONDS),
    ("idle_timeout_s=0.0", lambda: ServeSettings(idle_timeout_s=0.0), POSITIVE),
    (
        "idle_timeout_s=inf",
        lambda: ServeSettings(idle_timeout_s=float("inf")),
        "a finite number of seconds > 0",
    ),
    ("max_conversations=0", lambda: Conversations(lambda: None, max_conversations=0), "an integer >= 1"),
    ("max_bytes=0", lambda: Conversations(lambda: None, max_bytes=0), "an integer >= 1"),
    ("max_values=-1", lambda: LabelBudget(None, -1), "an integer >= 0"),
    ("max_values=-3", lambda: PrometheusSink(max_tools=-3), "an integer >= 0"),
    ("max_spans=0", lambda: PendingEvents(max_spans=0, max_bytes=1), "an integer >= 1"),
    ("max_bytes=-1", lambda: PendingEvents(max_spans=1, max_bytes=-1), "an integer >= 0"),
    ("max_chars=0", lambda: RecordMaker((), 0), "an integer >= 1"),
    (
        "period_s=nan",
        lambda: Throttle(logging.getLogger("x"), period_s=NAN),
        SECONDS,
    ),
    (
        "min_interval_s=-0.1",
        lambda: Progress(1, stream=io.StringIO(), min_interval_s=-0.1),
        SECONDS,
    ),
]


@pytest.mark.parametrize(("named", "make", "expected"), CASES, ids=[case[0] for case in CASES])
def test_a_bad_limit_is_refused_naming_the_field_and_the_value(
    named: str, make: Callable[[], object], expected: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(f'{named}: expected {expected}')}$"):
        make()


def test_the_bounds_themselves_are_accepted() -> None:
    serve: Any = ServeSettings(grpc_port=0, http_port=65535, metrics_port=0, retry_after_s=0.0)
    assert (serve.grpc_port, serve.http_port, serve.retry_after_s) == (0, 65535, 0.0)
    config = AssemblerConfig(grace_s=0, max_traces=1, max_event_bytes=0, late_memory=0)
    assert (config.max_traces, config.max_event_bytes) == (1, 0)
    conversations = Conversations(lambda: None, max_conversations=1, max_bytes=1)
    assert (conversations.max_conversations, conversations.max_bytes) == (1, 1)
    assert PendingEvents(max_spans=1, max_bytes=0).max_bytes == 0
