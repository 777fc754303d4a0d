"""What bounds the MCP tools' results (texts, pages, cursors), and the gate's stored-run filters."""

from __future__ import annotations

import pytest

from otel_traj.mcp.bounds import MAX_PAGE_CHARS, clip, decode_cursor, encode_cursor, page
from otel_traj.mcp.errors import ToolInputError


def test_long_texts_are_cut_saying_how_much_was_left_out() -> None:
    data = {"result": "x" * 1_500, "arguments": ["short", "y" * 1_001], "n": 3}
    assert clip(data) == {
        "result": "x" * 1_000 + "… [500 more characters]",
        "arguments": ["short", "y" * 1_000 + "… [1 more characters]"],
        "n": 3,
    }


def test_a_page_stops_at_its_limit_or_its_characters() -> None:
    assert page(range(10), 4, lambda _: 1) == ([0, 1, 2, 3], True)
    assert page(range(4), 4, lambda _: 1) == ([0, 1, 2, 3], False)
    big = MAX_PAGE_CHARS // 3 + 1
    assert page(range(10), 10, lambda _: big) == ([0, 1], True)
    # One item always, however large: a run is never left unreachable.
    assert page(range(2), 10, lambda _: 2 * MAX_PAGE_CHARS) == ([0], True)


def test_a_cursor_is_read_back_only_by_its_kind() -> None:
    cursor = encode_cursor("list_runs", [12, "ab"])
    assert decode_cursor(cursor, "list_runs") == [12, "ab"]
    for kind, text in (("list_conversations", cursor), ("list_runs", "%%%"), ("list_runs", "e30=")):
        with pytest.raises(ToolInputError, match=f"not a cursor of {kind}"):
            decode_cursor(text, kind)
