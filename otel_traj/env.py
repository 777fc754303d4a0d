"""Every environment variable otel-traj reads, declared once: its name, the values it takes, its
default, its unit and what it sets.

A setting reads its variable when the object it configures is made (``GRACE_S.read()`` in a
constructor default), never at import: a variable set later, or by a test, applies to the next
object. ``cite()`` is what a command's help says of it, ``docs_rows()`` the settings table of
``docs/reliability.md``. The kinds check a constructor's argument with the same bounds
(``COUNT.require("max_traces", 0)`` raises ``ValueError`` naming the field and the value).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")
logger = logging.getLogger("otel_traj")

MIB = 1024 * 1024

# Set while ``otel-traj serve`` reads its settings: a service refuses to start on a bad value, where a
# library embedded in someone's application logs it and keeps its default (as the SDK does for
# ``OTEL_BSP_*``).
_STRICT: ContextVar[bool] = ContextVar("otel_traj_strict_env", default=False)


class SettingError(ValueError):
    """An environment variable holds a value its setting cannot take (strict mode only)."""


def env_value(name: str, default: T, parse: Callable[[str], T], expected: str = "a number") -> T:
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
    """Within: an invalid variable raises ``SettingError`` (a service's startup)."""
    token = _STRICT.set(True)
    try:
        yield
    finally:
        _STRICT.reset(token)


@dataclass(frozen=True, slots=True)
class Kind(Generic[T]):
    """The values a setting takes. ``convert`` turns a variable's text into a value (ValueError when
    it cannot), ``accepts`` bounds it; ``expected`` says which values in an error, ``label`` in the
    settings table."""

    convert: Callable[[str], T]
    accepts: Callable[[object], bool]
    expected: str
    label: str

    def parse(self, raw: str) -> T:
        value = self.convert(raw)
        if not self.accepts(value):
            raise ValueError(raw)
        return value

    def require(self, name: str, value: T) -> T:
        """``value`` of constructor argument ``name``, or a ValueError naming both."""
        if not self.accepts(value):
            raise ValueError(f"{name}={value!r}: expected {self.expected}")
        return value


def _integer_from(low: int, high: float = math.inf) -> Callable[[object], bool]:
    return lambda value: isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _seconds(positive: bool) -> Callable[[object], bool]:
    def accepts(value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return False
        return value > 0 if positive else value >= 0

    return accepts


def _names(raw: str) -> list[str] | None:
    # ``,`` alone is an empty list: set, and naming nothing.
    return [item.strip() for item in raw.split(",") if item.strip()]


def _any(value: object) -> bool:
    return True


def _flag(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise ValueError(raw)


SECONDS: Kind[float] = Kind(float, _seconds(False), "a finite number of seconds >= 0", "seconds ≥ 0")
POSITIVE_SECONDS: Kind[float] = Kind(float, _seconds(True), "a finite number of seconds > 0", "seconds > 0")
COUNT: Kind[int] = Kind(int, _integer_from(1), "an integer >= 1", "integer ≥ 1")
SIZE: Kind[int] = Kind(int, _integer_from(0), "an integer >= 0", "integer ≥ 0")
PORT: Kind[int] = Kind(int, _integer_from(0, 65535), "a port from 0 to 65535", "port, 0 picks a free one")
TEXT: Kind[str] = Kind(str, _any, "text", "text")
OPTIONAL_TEXT: Kind[str | None] = Kind(str, _any, "text", "text")
NAMES: Kind[list[str] | None] = Kind(_names, _any, "names separated by commas", "names, comma-separated")
FLAG: Kind[bool] = Kind(_flag, lambda value: isinstance(value, bool), "true or false", "true or false")


@dataclass(frozen=True, slots=True)
class Variable(Generic[T]):
    """One environment variable: ``read()`` gives its value now (``default`` when unset or blank; a
    value its kind rejects is logged and the default used, or raises ``SettingError`` inside
    ``strict_settings()``). ``unit``: of a number (``s``, ``bytes``, ``characters``)."""

    name: str
    kind: Kind[T]
    default: T
    doc: str
    unit: str = ""

    def read(self) -> T:
        return env_value(self.name, self.default, self.kind.parse, self.kind.expected)

    def cite(self) -> str:
        """What a command's help says of the variable: ``env NAME, default VALUE``."""
        value = self.default
        shown = "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
        if isinstance(value, bool):
            shown = "on" if value else "off"
        if self.unit == "bytes" and isinstance(value, int) and value % MIB == 0:
            shown += f": {value // MIB} MiB"
        return f"env {self.name}, default {shown}"

    def default_text(self) -> str:
        """The default as the settings table shows it."""
        value = self.default
        if value is None:
            return "none"
        if isinstance(value, bool):
            return "on" if value else "off"
        if self.unit == "bytes" and isinstance(value, int) and value % MIB == 0:
            return f"{value // MIB} MiB"
        if isinstance(value, str):
            return f"`{value}`"
        if self.kind is PORT:
            return str(value)  # a name, not an amount: 4317, never 4,317
        number = f"{value:,g}" if isinstance(value, float) else f"{value:,}"
        return f"{number} {self.unit}".strip()


VARIABLES: list[Variable[Any]] = []


def _declare(name: str, kind: Kind[T], default: T, doc: str, unit: str = "") -> Variable[T]:
    variable = Variable(name, kind, default, doc, unit)
    VARIABLES.append(variable)
    return variable


# The assembler's limits (AssemblerConfig: processor, serve, grade).
GRACE_S = _declare(
    "OTEL_TRAJ_GRACE_S", SECONDS, 0.5, "wait after a trace looks complete, for spans still in flight", "s"
)
TTL_S = _declare(
    "OTEL_TRAJ_TTL_S",
    SECONDS,
    600.0,
    "a trace whose root never ends is graded `incomplete` after this long; set it above the p99 run length",
    "s",
)
MAX_TRACES = _declare(
    "OTEL_TRAJ_MAX_TRACES",
    COUNT,
    10_000,
    "traces in flight; in-process the oldest is graded `incomplete`, the service refuses new ones",
)
MAX_STEPS = _declare("OTEL_TRAJ_MAX_STEPS", COUNT, 1_000, "steps kept per trace")
MAX_VALUE_CHARS = _declare(
    "OTEL_TRAJ_MAX_VALUE_CHARS", COUNT, 4_096, "characters kept of each text a run holds", "characters"
)
MAX_BACKLOG = _declare("OTEL_TRAJ_MAX_BACKLOG", COUNT, 100_000, "in-process spans waiting for the worker")
MAX_TRACE_BYTES = _declare(
    "OTEL_TRAJ_MAX_TRACE_BYTES",
    COUNT,
    64 * MIB,
    "memory one run in flight holds; its later steps are dropped (`max_trace_bytes`)",
    "bytes",
)
MAX_HELD_BYTES = _declare(
    "OTEL_TRAJ_MAX_HELD_BYTES",
    COUNT,
    1024 * MIB,
    "memory the runs in flight hold; past it `serve` refuses new traces, in-process they are not kept",
    "bytes",
)
MAX_EVENT_BYTES = _declare(
    "OTEL_TRAJ_MAX_EVENT_BYTES",
    SIZE,
    64 * MIB,
    "GenAI events from log records waiting for their spans, in bytes of memory",
    "bytes",
)

# otel-traj serve (ServeSettings).
POLICY = _declare("OTEL_TRAJ_POLICY", OPTIONAL_TEXT, None, "policy file `serve` grades with; none: no checks")
HOST = _declare("OTEL_TRAJ_HOST", TEXT, "127.0.0.1", "address `serve` listens on")
GRPC_PORT = _declare("OTEL_TRAJ_GRPC_PORT", PORT, 4317, "OTLP/gRPC port of `serve`")
HTTP_PORT = _declare("OTEL_TRAJ_HTTP_PORT", PORT, 4318, "OTLP/HTTP port of `serve`")
METRICS_PORT = _declare(
    "OTEL_TRAJ_METRICS_PORT", PORT, 9464, "port of `serve`'s `/metrics`, `/healthz` and `/readyz`"
)
AUTH_TOKEN = _declare(
    "OTEL_TRAJ_AUTH_TOKEN", OPTIONAL_TEXT, None, "bearer token `serve` requires (prefer the token file)"
)
AUTH_TOKEN_FILE = _declare(
    "OTEL_TRAJ_AUTH_TOKEN_FILE", OPTIONAL_TEXT, None, "file holding the bearer token, read at startup"
)
TLS_CERT = _declare(
    "OTEL_TRAJ_TLS_CERT", OPTIONAL_TEXT, None, "PEM certificate chain: TLS on both OTLP ports"
)
TLS_KEY = _declare("OTEL_TRAJ_TLS_KEY", OPTIONAL_TEXT, None, "PEM private key of the certificate")
TLS_CLIENT_CA = _declare(
    "OTEL_TRAJ_TLS_CLIENT_CA",
    OPTIONAL_TEXT,
    None,
    "PEM CA certificates: the OTLP ports require client certificates they signed",
)
MAX_REQUEST_BYTES = _declare(
    "OTEL_TRAJ_MAX_REQUEST_BYTES", COUNT, 16 * MIB, "largest request `serve` takes, decompressed", "bytes"
)
RETRY_AFTER_S = _declare(
    "OTEL_TRAJ_RETRY_AFTER_S", SECONDS, 1.0, "delay an overloaded `serve` asks exporters to wait", "s"
)
GRPC_WORKERS = _declare("OTEL_TRAJ_GRPC_WORKERS", COUNT, 8, "threads serving OTLP/gRPC requests")
IDLE_TIMEOUT_S = _declare(
    "OTEL_TRAJ_IDLE_TIMEOUT_S",
    POSITIVE_SECONDS,
    10.0,
    "an HTTP connection sending no complete request head is closed after this long",
    "s",
)
BODY_TIMEOUT_S = _declare(
    "OTEL_TRAJ_BODY_TIMEOUT_S",
    POSITIVE_SECONDS,
    10.0,
    "a request's body (HTTP) or message (gRPC) must arrive within this long of its head, "
    "plus a second per `OTEL_TRAJ_MIN_BODY_RATE` bytes received (HTTP); then 408 / `CANCELLED`",
    "s",
)
MIN_BODY_RATE = _declare(
    "OTEL_TRAJ_MIN_BODY_RATE",
    SIZE,
    65_536,
    "bytes of an HTTP body that earn it one more second to arrive; 0: the body timeout is the whole limit",
    "bytes/s",
)
MAX_ARRIVING = _declare(
    "OTEL_TRAJ_MAX_ARRIVING",
    COUNT,
    256,
    "requests per OTLP port whose body or message is still arriving; one more cuts the longest-waiting "
    "(503 / `CANCELLED`)",
)
EMIT_OTEL = _declare(
    "OTEL_TRAJ_EMIT_OTEL",
    OPTIONAL_TEXT,
    None,
    "base URL of an OTLP/HTTP receiver `serve` exports `gen_ai.evaluation.result` events to",
)
CONVERSATIONS_FROM = _declare(
    "OTEL_TRAJ_CONVERSATIONS_FROM",
    TEXT,
    "traces",
    "`traces` (the traces `serve` grades), `logs` (other replicas' trace summaries) or `store` (every "
    "replica's summaries in the PostgreSQL store)",
)
LOG_LEVEL = _declare("OTEL_TRAJ_LOG_LEVEL", TEXT, "INFO", "least severe log records `serve` writes to stderr")
LOG_FORMAT = _declare("OTEL_TRAJ_LOG_FORMAT", TEXT, "text", "`text`, or `json`: one JSON object per line")

# The verdict store (SqliteSink, PostgresSink, serve, report, policy suggest, gate).
STORE = _declare(
    "OTEL_TRAJ_STORE", TEXT, "otel-traj.db", "verdict store: a SQLite file, or a `postgresql://` URL"
)
STORE_QUEUE = _declare("OTEL_TRAJ_STORE_QUEUE", COUNT, 10_000, "verdicts waiting for the store writer")
MCP = _declare(
    "OTEL_TRAJ_MCP",
    FLAG,
    False,
    "serve the MCP server on the OTLP/HTTP port at `/mcp`, over the store, behind the bearer token",
)
STORE_RETENTION = _declare(
    "OTEL_TRAJ_STORE_RETENTION", SECONDS, 0.0, "how long a PostgreSQL store keeps runs; 0: forever", "s"
)

# Prometheus label cardinality (PrometheusSink).
PROMETHEUS_TOOLS = _declare(
    "OTEL_TRAJ_PROMETHEUS_TOOLS", NAMES, None, "the only `tool` label values (others are `other`)"
)
PROMETHEUS_MAX_TOOLS = _declare(
    "OTEL_TRAJ_PROMETHEUS_MAX_TOOLS", SIZE, 50, "without an allow-list, the first tool names kept"
)
PROMETHEUS_AGENTS = _declare(
    "OTEL_TRAJ_PROMETHEUS_AGENTS", NAMES, None, "the only `agent` label values (others are `other`)"
)
PROMETHEUS_MAX_AGENTS = _declare(
    "OTEL_TRAJ_PROMETHEUS_MAX_AGENTS", SIZE, 20, "without an allow-list, the first agent names kept"
)
PROMETHEUS_VERSIONS = _declare(
    "OTEL_TRAJ_PROMETHEUS_VERSIONS", NAMES, None, "the only `version` label values (others are `other`)"
)
PROMETHEUS_MAX_VERSIONS = _declare(
    "OTEL_TRAJ_PROMETHEUS_MAX_VERSIONS", SIZE, 20, "without an allow-list, the first versions kept"
)

# Langfuse (LangfuseSink; the LANGFUSE_* names are the Langfuse SDK's).
LANGFUSE_PUBLIC_KEY = _declare("LANGFUSE_PUBLIC_KEY", OPTIONAL_TEXT, None, "Langfuse project's public key")
LANGFUSE_SECRET_KEY = _declare("LANGFUSE_SECRET_KEY", OPTIONAL_TEXT, None, "Langfuse project's secret key")
LANGFUSE_BASE_URL = _declare(
    "LANGFUSE_BASE_URL", OPTIONAL_TEXT, None, "Langfuse server; none: `LANGFUSE_HOST`, else Langfuse Cloud"
)
LANGFUSE_HOST = _declare("LANGFUSE_HOST", OPTIONAL_TEXT, None, "older name of `LANGFUSE_BASE_URL`")
LANGFUSE_TRACING_ENVIRONMENT = _declare(
    "LANGFUSE_TRACING_ENVIRONMENT", OPTIONAL_TEXT, None, "Langfuse environment of the scores"
)
LANGFUSE_MAX_AGE_S = _declare(
    "OTEL_TRAJ_LANGFUSE_MAX_AGE_S", POSITIVE_SECONDS, 3600.0, "scores queued longer are dropped", "s"
)

# gen_ai.evaluation.result events (EvaluationEventSink).
EVENTS_PROVENANCE = _declare(
    "OTEL_TRAJ_EVENTS_PROVENANCE",
    FLAG,
    False,
    "add the evaluator provenance attributes proposed upstream (`gen_ai.evaluation.evaluator.*`)",
)
EVENTS_MAX_QUEUE = _declare(
    "OTEL_TRAJ_EVENTS_MAX_QUEUE", COUNT, 10_000, "verdicts waiting for the evaluation-event sink"
)
SERVICE_NAME = _declare(
    "OTEL_SERVICE_NAME",
    OPTIONAL_TEXT,
    None,
    "the SDK's service name; unset, the evaluation-event sink's own provider names it `otel-traj`",
)

# LLM judges (JudgeSink, OpenAIChatModel).
JUDGE_QUEUE = _declare("OTEL_TRAJ_JUDGE_QUEUE", COUNT, 1_000, "runs waiting for a judge")
OPENAI_API_KEY = _declare("OPENAI_API_KEY", OPTIONAL_TEXT, None, "API key of the judges' model endpoint")
OPENAI_BASE_URL = _declare(
    "OPENAI_BASE_URL", OPTIONAL_TEXT, None, "OpenAI-compatible endpoint of the judges; none: OpenAI's"
)

# Conversations in flight (Conversations).
MAX_CONVERSATIONS = _declare(
    "OTEL_TRAJ_MAX_CONVERSATIONS", COUNT, 10_000, "open conversations; beyond, the oldest is graded early"
)
CONVERSATION_MAX_BYTES = _declare(
    "OTEL_TRAJ_CONVERSATION_MAX_BYTES",
    COUNT,
    64 * MIB,
    "summaries the open conversations hold; beyond, the oldest is graded early",
    "bytes",
)

# The offline commands: worker processes reading trace files (grade, gate, policy suggest).
JOBS = _declare("OTEL_TRAJ_JOBS", SIZE, 0, "offline worker processes; 0: one per core from 16 MiB of input")

# The terminal's type (progress line of the offline commands).
TERM = _declare("TERM", OPTIONAL_TEXT, None, "`dumb`: no progress line on a terminal")


def docs_rows() -> list[str]:
    """The settings table of ``docs/reliability.md`` (``tests/test_env.py`` keeps the two equal)."""
    rows = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    rows += [f"| `{v.name}` | {v.kind.label} | {v.default_text()} | {v.doc} |" for v in VARIABLES]
    return rows
