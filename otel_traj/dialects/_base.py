"""Value helpers shared by the dialect parsers: coercion, capping, safe JSON and span errors.

Attribute values come from other people's instrumentation and from files: any of them may have the
wrong type, hold invalid JSON or be huge. Every helper here returns ``None`` instead of raising.

Text is made valid here, once, as spans become steps and records: a Python string may hold a lone
surrogate (``"\\ud800"``, from an SDK attribute or a JSON escape) that UTF-8 cannot encode, and every
sink, scrape and report that met one would fail. Each helper that returns text replaces them with
U+FFFD.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from otel_traj.spanview import STATUS_ERROR, SpanView

# Upper bound on text we json-parse. Message lists grow with the conversation; past this size the
# parse costs more than the step is worth, so the text fields stay empty.
PARSE_LIMIT = 512 * 1024
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


# A ``\uXXXX`` escape of a surrogate that is not half of a pair: JSON text that decodes to a lone one.
_LONE_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def valid_json_text(text: str | None) -> str | None:
    """Text that may be parsed as JSON later (arguments, results): its lone surrogate escapes become
    ``\\ufffd``, so what it decodes to is valid text too."""
    if text is None or "\\u" not in text:
        return text
    return _LONE_ESCAPE.sub(r"\\ufffd", text)


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, so that it encodes as UTF-8."""
    # ``isascii`` reads a flag CPython keeps on every string: the common case costs no scan.
    if text.isascii():
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def loads(value: Any, limit: int = PARSE_LIMIT) -> Any:
    """The JSON value of ``value`` if it is a string of JSON no longer than ``limit``, else None."""
    if not isinstance(value, str) or len(value) > limit:
        return None
    return parse_json(value)


@lru_cache(maxsize=8)
def loads_once(text: str) -> Any:
    """``loads`` of an attribute that several fields of one span are read from: parsed once."""
    return loads(text)


def parse_json(text: str) -> Any:
    """The JSON value of ``text``, or None if it is not JSON (or nested too deep to parse)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def json_string(value: Any) -> Any:
    """A string serialized as JSON (``"\\"text\\""``: Langfuse's outputs, every MLflow attribute) as
    the string itself; any other value as it is."""
    if isinstance(value, str) and value.startswith('"'):
        decoded = loads(value)
        if isinstance(decoded, str):
            return decoded
    return value


def dumps(value: Any) -> str | None:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return None


def as_text(value: Any) -> str | None:
    """Attribute value as text: strings unchanged, sequences and mappings as JSON, scalars via str."""
    if isinstance(value, str):
        return value
    if value is None:
        return None
    if isinstance(value, Mapping | list | tuple):
        return dumps(value if not isinstance(value, tuple) else list(value))
    if isinstance(value, bool | int | float):
        return str(value)
    return None


def clip(value: Any, max_chars: int) -> tuple[str | None, bool]:
    """``(text, truncated)``: the value as text, cut to ``max_chars``."""
    text = value if isinstance(value, str) else as_text(value)
    if text is None:
        return None, False
    if len(text) > max_chars:
        return valid_text(text[: max(0, max_chars)]), True
    return valid_text(text), False


def clip_text(value: Any, max_chars: int) -> str | None:
    # Most values are short strings: they need neither ``as_text`` nor the tuple of ``clip``.
    if isinstance(value, str) and len(value) <= max_chars:
        return valid_text(value)
    return clip(value, max_chars)[0]


def bounded_value(value: Any, max_chars: int) -> Any:
    """An attribute value kept for a whole run (a captured attribute): text valid and cut to
    ``max_chars``; a sequence cut once its items hold ``max_chars`` characters; numbers as they are."""
    if isinstance(value, str):
        return clip_text(value, max_chars)
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, bytes):
        return value[:max_chars]
    if isinstance(value, list | tuple):
        kept: list[Any] = []
        room = max_chars
        for item in value:
            if room <= 0:
                break
            item = bounded_value(item, room)
            room -= len(item) if isinstance(item, str | bytes) else 1
            kept.append(item)
        return tuple(kept)
    return clip_text(value, max_chars)


def json_object_text(value: Any) -> bool:
    """Whether ``value`` is text shaped as one JSON object: a key's value that is evidence of what a
    span is only when well formed (a number or ``{"a": `` in its place is no evidence)."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    return text.startswith("{") and text.endswith("}")


def as_name(value: Any) -> str | None:
    """A non-empty name given as text (a tool's, an agent's); a number or anything else is none."""
    return as_str(value) if isinstance(value, str) else None


def as_str(value: Any) -> str | None:
    """A non-empty identifier-like string (names, ids, models), else None."""
    if isinstance(value, str):
        return valid_text(value) or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def as_int(value: Any) -> int | None:
    """A token count: ints, integral floats and digit strings; never bools, NaN or negatives."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value >= 0 else None
    # ``isdigit`` also accepts digits ``int`` does not read (``"²"``): ASCII only.
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 20:
        return int(value)
    return None


def first(attrs: Mapping[str, Any], keys: Iterable[str]) -> Any:
    """The first present, non-None value among ``keys``."""
    for key in keys:
        value = attrs.get(key)
        if value is not None:
            return value
    return None


def first_int(attrs: Mapping[str, Any], keys: Iterable[str]) -> int | None:
    for key in keys:
        value = attrs.get(key)
        if value is not None:
            number = as_int(value)
            if number is not None:
                return number
    return None


def str_tuple(value: Any) -> tuple[str, ...]:
    """A string list attribute (or a JSON list, or one string) as a tuple of strings."""
    if isinstance(value, str):
        parsed = loads(value, 4096) if value.startswith("[") else None
        value = parsed if isinstance(parsed, list) else [value]
    if isinstance(value, list | tuple):
        return tuple(valid_text(item) for item in value if isinstance(item, str) and item)
    return ()


def suffix(name: str, prefix: str) -> str | None:
    """``"execute_tool get_x"`` with prefix ``"execute_tool "`` gives ``"get_x"``."""
    if isinstance(name, str) and name.startswith(prefix):
        rest = name[len(prefix) :].strip()
        return rest or None
    return None


def span_error(
    view: SpanView, attrs: Mapping[str, Any], failed: bool = False
) -> tuple[bool, str | None, str | None]:
    """``(ok, error_type, error_message)`` from the status, ``error.type`` and ``exception`` events.

    The exception event's message wins over the status description, which some instrumentations
    fill with the exception's repr and traceback. Events are read only for failed spans.
    """
    error_type = as_str(attrs.get("error.type"))
    if not (failed or error_type or view.status_code == STATUS_ERROR):
        return True, None, None
    message: str | None = None
    try:
        for event in view.events:
            if event.name == "exception":
                event_attrs = event.attributes or {}
                error_type = error_type or as_str(event_attrs.get("exception.type"))
                message = as_str(event_attrs.get("exception.message"))
                break
    except (AttributeError, TypeError):
        pass
    if message is None and isinstance(view.status_message, str) and view.status_message:
        message = view.status_message
    if error_type in (None, "Exception") and message is not None:
        error_type, message = _stack_trace(message) or (error_type, message)
    return False, error_type, message


# LangChain's record of an error: ``repr(exc)`` followed by the formatted traceback, which LangSmith
# exports as a generic ``Exception`` whose message is that text.
_STACK_TRACE = re.compile(r"([A-Za-z_][\w.]*)\((.*?)\)Traceback \(most recent call last\):", re.DOTALL)
_LITERAL_LIMIT = 4096


def _stack_trace(text: str) -> tuple[str, str] | None:
    """``(type, message)`` of the exception a ``repr(exc)`` + traceback text starts with: the message
    is the exception's one argument (the text ``str(exc)`` gives), else its arguments as written."""
    match = _STACK_TRACE.match(text)
    if match is None:
        return None
    written = match.group(2)
    try:
        value = ast.literal_eval(f"({written},)") if len(written) <= _LITERAL_LIMIT else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = None
    if isinstance(value, tuple) and len(value) == 1:
        return match.group(1), str(value[0])
    return match.group(1), written
