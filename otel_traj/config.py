"""Settings: one parser for `OTEL_TRAJ_*` values, and the assembler's limits (constructor arguments
with environment-variable defaults)."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TypeVar

from otel_traj.dialects.declarations import CAPTURE_KEYS
from otel_traj.versions import VERSION_ATTRIBUTES

_T = TypeVar("_T")
logger = logging.getLogger("otel_traj")

# Set while ``otel-traj serve`` reads its settings: a service refuses to start on a bad value, where a
# library embedded in someone's application logs it and keeps its default (as the SDK does for
# ``OTEL_BSP_*``).
_STRICT: ContextVar[bool] = ContextVar("otel_traj_strict_env", default=False)

DEFAULT_CAPTURE = (
    "app.customer_id",
    "enduser.id",
    "user.id",
    "session.id",
    "gen_ai.conversation.id",
    *CAPTURE_KEYS,
    *VERSION_ATTRIBUTES,
)


class SettingError(ValueError):
    """An ``OTEL_TRAJ_*`` variable holds a value its setting cannot take (strict mode only)."""


def env_value(name: str, default: _T, parse: Callable[[str], _T], expected: str = "a number") -> _T:
    """``parse`` applied to environment variable ``name``; ``default`` when it is unset or blank.

    A value ``parse`` rejects (ValueError) is logged naming the variable, the value and ``expected``,
    and the default is used; inside ``strict_settings()`` it raises ``SettingError`` instead.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return parse(raw)
    except ValueError as exc:
        message = f"{name}={raw!r}: expected {expected}"
        if _STRICT.get():
            raise SettingError(message) from exc
        logger.warning("%s; using the default %r", message, default)
        return default


@contextmanager
def strict_settings() -> Iterator[None]:
    """Within: an invalid ``OTEL_TRAJ_*`` value raises ``SettingError`` (a service's startup)."""
    token = _STRICT.set(True)
    try:
        yield
    finally:
        _STRICT.reset(token)


def _non_negative(parse: Callable[[str], float]) -> Callable[[str], float]:
    def checked(raw: str) -> float:
        value = parse(raw)
        if not math.isfinite(value) or value < 0:
            raise ValueError(raw)
        return value

    return checked


def env_float(name: str, default: float) -> float:
    """A finite, non-negative number of ``name`` (seconds, sizes)."""
    return env_value(name, default, _non_negative(float), "a non-negative number")


def env_int(name: str, default: int) -> int:
    """A non-negative integer of ``name``."""
    return env_value(name, default, lambda raw: int(_non_negative(int)(raw)), "a non-negative integer")


def env_count(name: str, default: int) -> int:
    """A positive integer of ``name`` (a cap: 0 would refuse everything)."""

    def positive(raw: str) -> int:
        value = int(raw)
        if value < 1:
            raise ValueError(raw)
        return value

    return env_value(name, default, positive, "a positive integer")


def env_str(name: str, default: str | None) -> str | None:
    return env_value(name, default, str, "text")


def env_list(name: str) -> list[str] | None:
    """A comma-separated list of ``name``; None when unset (an empty list when set to ``,``)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    return [item.strip() for item in raw.split(",") if item.strip()]


@dataclass(slots=True, frozen=True, kw_only=True)
class AssemblerConfig:
    """Limits of the per-trace buffers.

    grace_s: wait after a trace looks complete, for spans still in flight (exporter batching, other
    threads); ttl_s: a trace whose root never ends is graded as incomplete after this long (set it
    above the p99 agent-run length); max_traces / max_steps / max_chars: memory caps; max_backlog:
    in-process spans waiting for the worker; max_event_bytes: GenAI events (log records) waiting for
    their spans, estimated bytes. What a cap drops is counted in ``otel_traj_dropped_total``.

    max_chars caps every text a run keeps until it is graded (arguments, results, messages, names,
    ids, captured attributes, run metadata) in characters; a character takes at most 4 bytes, so a
    kept text takes at most ``4 * max_chars`` bytes (plus a string header of under 80 bytes).
    """

    grace_s: float = field(default_factory=lambda: env_float("OTEL_TRAJ_GRACE_S", 0.5))
    ttl_s: float = field(default_factory=lambda: env_float("OTEL_TRAJ_TTL_S", 600.0))
    max_traces: int = field(default_factory=lambda: env_count("OTEL_TRAJ_MAX_TRACES", 10_000))
    max_steps: int = field(default_factory=lambda: env_count("OTEL_TRAJ_MAX_STEPS", 1_000))
    # Characters, not bytes: cutting text by bytes could split a character (the env name says so).
    max_chars: int = field(default_factory=lambda: env_count("OTEL_TRAJ_MAX_VALUE_CHARS", 4_096))
    max_backlog: int = field(default_factory=lambda: env_count("OTEL_TRAJ_MAX_BACKLOG", 100_000))
    max_event_bytes: int = field(
        default_factory=lambda: env_int("OTEL_TRAJ_MAX_EVENT_BYTES", 64 * 1024 * 1024)
    )
    capture_attributes: tuple[str, ...] = DEFAULT_CAPTURE
    late_memory: int = 10_000

    def __post_init__(self) -> None:
        # A cap of 0 or a NaN wait is accepted by nothing downstream: it would drop or stall every run.
        for name in ("grace_s", "ttl_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name}={value!r}: expected a finite number of seconds >= 0")
        for name in ("max_traces", "max_steps", "max_chars", "max_backlog"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"{name}={value!r}: expected an integer >= 1")
        for name in ("max_event_bytes", "late_memory"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 0):
                raise ValueError(f"{name}={value!r}: expected an integer >= 0")

    def with_capture(self, keys: tuple[str, ...]) -> AssemblerConfig:
        merged = tuple(dict.fromkeys((*self.capture_attributes, *keys)))
        return replace(self, capture_attributes=merged)
