"""What keeps every tool's result small enough for a model's context: a cap on the items of a page, on
the characters of each text, and on the characters of a page, with an opaque cursor to the next page.

A cursor is the page's kind and where the next page starts, as URL-safe base64 of a JSON object; a
cursor of another tool, or one that was altered, is refused with a message saying so.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from otel_traj.mcp.errors import ToolInputError

# Items of a page: the default and the most a caller may ask for.
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
# Characters of one text of a result (an argument value, a tool result, a reason) and of a whole page.
MAX_TEXT = 1_000
MAX_PAGE_CHARS = 60_000
# Steps (tool calls, and model calls) of one run per page of ``get_run``; steps a failed check names.
STEPS_PER_PAGE = 25
MAX_STEP_IDS = 20

T = TypeVar("T")


def clip(value: Any, limit: int = MAX_TEXT) -> Any:
    """``value`` with every text longer than ``limit`` cut, saying how much was left out."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return f"{value[:limit]}… [{len(value) - limit} more characters]"
    if isinstance(value, dict):
        return {k: clip(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [clip(v, limit) for v in value]
    return value


def encode_cursor(kind: str, position: Any) -> str:
    text = json.dumps({"kind": kind, "at": position}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode()


def decode_cursor(cursor: str, kind: str) -> Any:
    """The position a cursor of ``kind`` holds; raises :class:`ToolInputError` otherwise."""
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict) or data.get("kind") != kind or "at" not in data:
        raise ToolInputError(f"cursor: not a cursor of {kind}; pass the next_cursor a call of it returned")
    return data["at"]


def page(items: Iterable[T], limit: int, size: Callable[[T], int]) -> tuple[list[T], bool]:
    """At most ``limit`` items, fewer when their ``size`` would pass ``MAX_PAGE_CHARS`` (one item at
    least), and whether more items follow."""
    taken: list[T] = []
    chars = 0
    for item in items:
        chars += size(item)
        if len(taken) >= limit or (taken and chars > MAX_PAGE_CHARS):
            return taken, True
        taken.append(item)
    return taken, False


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolInputError(f"limit: must be from 1 to {MAX_LIMIT}, got {limit}")
    return limit
