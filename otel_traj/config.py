"""Assembler settings: constructor arguments with ``OTEL_TRAJ_*`` environment-variable defaults."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

_T = TypeVar("_T")

DEFAULT_CAPTURE = (
    "app.customer_id",
    "enduser.id",
    "user.id",
    "session.id",
    "gen_ai.conversation.id",
    "langfuse.session.id",
    "langfuse.user.id",
)


def env_value(name: str, default: _T, parse: Callable[[str], _T], expected: str = "a number") -> _T:
    """``parse`` applied to environment variable ``name``; ``default`` when it is unset or empty.

    A value ``parse`` rejects raises a ValueError that names the variable, the value and ``expected``.
    """
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        return parse(raw)
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r}: expected {expected}") from exc


def _env_float(name: str, default: float) -> float:
    return env_value(name, default, float)


def _env_int(name: str, default: int) -> int:
    return int(_env_float(name, default))


@dataclass(slots=True, frozen=True)
class AssemblerConfig:
    """Limits of the per-trace buffers.

    grace_s: wait after a trace looks complete, for spans still in flight (exporter batching, other
    threads); ttl_s: a trace whose root never ends is graded as incomplete after this long (set it
    above the p99 agent-run length); max_traces / max_steps / max_chars: memory caps; max_backlog:
    in-process spans waiting for the worker. What a cap drops is counted in ``otel_traj_dropped_total``.
    """

    grace_s: float = field(default_factory=lambda: _env_float("OTEL_TRAJ_GRACE_S", 0.5))
    ttl_s: float = field(default_factory=lambda: _env_float("OTEL_TRAJ_TTL_S", 600.0))
    max_traces: int = field(default_factory=lambda: _env_int("OTEL_TRAJ_MAX_TRACES", 10_000))
    max_steps: int = field(default_factory=lambda: _env_int("OTEL_TRAJ_MAX_STEPS", 1_000))
    max_chars: int = field(default_factory=lambda: _env_int("OTEL_TRAJ_MAX_VALUE_CHARS", 4_096))
    max_backlog: int = field(default_factory=lambda: _env_int("OTEL_TRAJ_MAX_BACKLOG", 100_000))
    capture_attributes: tuple[str, ...] = DEFAULT_CAPTURE
    late_memory: int = 10_000

    def with_capture(self, keys: tuple[str, ...]) -> AssemblerConfig:
        merged = tuple(dict.fromkeys((*self.capture_attributes, *keys)))
        return replace(self, capture_attributes=merged)
