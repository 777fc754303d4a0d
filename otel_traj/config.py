"""The assembler's limits: constructor arguments with environment-variable defaults (declared in
``otel_traj.env``), checked when the object is made."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from otel_traj import env
from otel_traj.dialects.declarations import CAPTURE_KEYS
from otel_traj.versions import VERSION_ATTRIBUTES

DEFAULT_CAPTURE = (
    "app.customer_id",
    "enduser.id",
    "user.id",
    "session.id",
    "gen_ai.conversation.id",
    *CAPTURE_KEYS,
    *VERSION_ATTRIBUTES,
)


@dataclass(slots=True, frozen=True, kw_only=True)
class AssemblerConfig:
    """Limits of the per-trace buffers.

    grace_s: wait after a trace looks complete, for spans still in flight (exporter batching, other
    threads); ttl_s: a trace whose root never ends is graded as incomplete after this long (set it
    above the p99 agent-run length); max_traces / max_steps / max_chars: memory caps; max_backlog:
    in-process spans waiting for the worker; max_event_bytes: GenAI events (log records) waiting for
    their spans, in bytes of memory as allocated; max_trace_bytes / max_held_bytes: the memory one run
    in flight, and all of them, hold (``held.held_bytes``: as allocated, deferred parses included).
    What a cap drops is counted in ``otel_traj_dropped_total``.

    max_chars caps every text a run keeps until it is graded (arguments, results, messages, names,
    ids, captured attributes, run metadata) in characters; a character takes at most 4 bytes, so a
    kept text takes at most ``4 * max_chars`` bytes (plus a string header of under 80 bytes).
    """

    grace_s: float = field(default_factory=env.GRACE_S.read)
    ttl_s: float = field(default_factory=env.TTL_S.read)
    max_traces: int = field(default_factory=env.MAX_TRACES.read)
    max_steps: int = field(default_factory=env.MAX_STEPS.read)
    # Characters, not bytes: cutting text by bytes could split a character (the env name says so).
    max_chars: int = field(default_factory=env.MAX_VALUE_CHARS.read)
    max_backlog: int = field(default_factory=env.MAX_BACKLOG.read)
    max_event_bytes: int = field(default_factory=env.MAX_EVENT_BYTES.read)
    max_trace_bytes: int = field(default_factory=env.MAX_TRACE_BYTES.read)
    max_held_bytes: int = field(default_factory=env.MAX_HELD_BYTES.read)
    capture_attributes: tuple[str, ...] = DEFAULT_CAPTURE
    late_memory: int = 10_000

    def __post_init__(self) -> None:
        # A cap of 0 or a NaN wait is accepted by nothing downstream: it would drop or stall every run.
        for name in ("grace_s", "ttl_s"):
            env.SECONDS.require(name, getattr(self, name))
        for name in (
            "max_traces",
            "max_steps",
            "max_chars",
            "max_backlog",
            "max_trace_bytes",
            "max_held_bytes",
        ):
            env.COUNT.require(name, getattr(self, name))
        for name in ("max_event_bytes", "late_memory"):
            env.SIZE.require(name, getattr(self, name))

    def with_capture(self, keys: tuple[str, ...]) -> AssemblerConfig:
        merged = tuple(dict.fromkeys((*self.capture_attributes, *keys)))
        return replace(self, capture_attributes=merged)
