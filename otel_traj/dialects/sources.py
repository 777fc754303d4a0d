"""Evidence sources: where one field of a step may be recorded, and how its raw value is read.

A source is a label (what the docs show: an attribute key, a span event, the span name) and a reader
``(view, attributes, max_chars) -> value or None``. The field tables (``fields``) list the sources of
each field in precedence order; the first that yields a value wins. Readers should not raise; one
that does makes its field unreadable, never the span silently lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from otel_traj.dialects._base import suffix
from otel_traj.dialects._messages import Output
from otel_traj.spanview import SpanView

Reader = Callable[[SpanView, Mapping[str, Any], int], Any]
Convert = Callable[[Any], Any]
# A condition on the span's attributes for keys whose meaning depends on who wrote them.
Guard = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True, slots=True)
class Source:
    label: str
    read: Reader
    # The attribute a plain attribute source reads on any span (None: an event, a span name, a
    # structured reader, or a key read only on some dialect's spans).
    key: str | None = None
    # An attribute without which the source has nothing to read: absent, the source is skipped
    # without calling it (most spans carry one dialect's keys, so most sources are skipped so).
    trigger: str | None = None


def _attribute_reader(key: str, convert: Convert | None, when: Guard | None) -> Reader:
    def read(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Any:
        value = attrs.get(key)
        if value is None or (when is not None and not when(attrs)):
            return None
        return convert(value) if convert is not None else value

    return read


def attribute(
    key: str, convert: Convert | None = None, *, when: Guard | None = None, note: str = ""
) -> Source:
    """The attribute ``key``, converted; only on spans ``when`` accepts (``note`` says which)."""
    label = f"`{key}`" + (f" ({note})" if note else "")
    return Source(label, _attribute_reader(key, convert, when), key if when is None else None, key)


def attributes(keys: Iterable[str], convert: Convert | None = None) -> tuple[Source, ...]:
    return tuple(attribute(key, convert) for key in keys)


def event_attribute(event: str, key: str, convert: Convert | None = None) -> Source:
    """Attribute ``key`` of the first span event named ``event``."""

    def read(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Any:
        for found in view.events:
            if found.name == event:
                value = (found.attributes or {}).get(key)
                if value is not None:
                    return convert(value) if convert is not None else value
        return None

    return Source(f"event `{event}` → `{key}`", read)


class UnreadableField(Exception):
    """A field of a step that could not be read: the span becomes an unreadable step."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def first_of(
    sources: Iterable[Source],
    view: SpanView,
    attrs: Mapping[str, Any],
    max_chars: int,
    accept: Convert | None = None,
) -> Any:
    """The first value a source yields (None and empty text count as nothing), through ``accept``
    when given: a value it turns into None (of the wrong type) is no value, and the next source is
    read. A reader that raises makes the field unreadable (``UnreadableField`` naming the source)."""
    for source in sources:
        value = _read(source, view, attrs, max_chars, accept)
        if value is not None and value != "":
            return value
    return None


def first_text_of(sources: Sequence[Source], view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Any:
    """As :func:`first_of`, for a text field whose sources may defer their reading (a callable read
    when first needed: a conversation's last user message). A deferred text that reads as nothing
    gives the next source's value (read now), as if the sources had been read in order then."""
    for index, source in enumerate(sources):
        value = _read(source, view, attrs, max_chars, None)
        if value is None or value == "":
            continue
        if not callable(value):
            return value
        fallback = first_text_of(sources[index + 1 :], view, attrs, max_chars)
        return value if fallback is None else partial(_deferred_or, value, fallback)
    return None


def _deferred_or(read: Callable[[], str | None], fallback: Callable[[], str | None] | str) -> str | None:
    text = read()
    if text is not None and text != "":
        return text
    return fallback() if callable(fallback) else fallback


def _read(
    source: Source, view: SpanView, attrs: Mapping[str, Any], max_chars: int, accept: Convert | None
) -> Any:
    if source.trigger is not None and source.trigger not in attrs:
        return None
    try:
        value = source.read(view, attrs, max_chars)
    except Exception as exc:
        raise UnreadableField(source.label, f"{type(exc).__name__}: {exc}"[:200]) from exc
    return accept(value) if accept is not None and value is not None else value


def equals(key: str, *values: str) -> Guard:
    accepted = frozenset(values)
    return lambda attrs: attrs.get(key) in accepted


def has(key: str) -> Guard:
    return lambda attrs: key in attrs


# Values frameworks write where they have nothing to say.
UNSPECIFIED = frozenset({"<not specified>", "N/A", ""})


def specified(value: Any) -> Any:
    return None if isinstance(value, str) and value in UNSPECIFIED else value


def text_only(
    read: Callable[[SpanView, Mapping[str, Any], int], Output | None],
) -> Reader:
    """A reader of ``(text, requested tools, finish reasons)`` made a reader of the text alone."""

    def text(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
        output = read(view, attrs, max_chars)
        return output[0] if output is not None else None

    return text


def span_name_after(prefix: str) -> Source:
    """The span name after ``prefix`` (``execute_tool <name>``)."""
    return Source(f"span name after `{prefix}`", lambda view, attrs, _: suffix(view.name, prefix))
