"""Trace files are parsed by orjson when it can and by the standard parser otherwise: the values are
the same either way."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from otel_traj.adapters.files import _json_documents

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
TREES = st.recursive(SCALARS, lambda c: st.lists(c) | st.dictionaries(st.text(), c), max_leaves=40)


@given(TREES, st.booleans())
def test_one_document_reads_as_the_standard_parser_reads_it(value: Any, ascii_only: bool) -> None:
    # Integers beyond 64 bits and infinities are among the values: orjson refuses them, the
    # standard parser takes them.
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert list(_json_documents(text)) == [json.loads(text)]


@given(st.lists(TREES, min_size=2, max_size=4), st.sampled_from(["\n", "", " \r\n"]))
def test_several_documents_read_one_by_one(values: list[Any], separator: str) -> None:
    text = separator.join(json.dumps(v) for v in values)
    assert list(_json_documents(text)) == [json.loads(json.dumps(v)) for v in values]


def test_what_only_the_standard_parser_takes() -> None:
    text = 'NaN {"a": 123456789012345678901} "\\ud800" {"k": 1, "k": 2}'
    nan, big, surrogate, duplicate = _json_documents(text)
    assert math.isnan(nan)
    assert big == {"a": 123456789012345678901}
    assert surrogate == "\ud800"
    assert duplicate == {"k": 2}
    (duplicate_alone,) = _json_documents('{"k": 1, "k": 2}')
    assert duplicate_alone == {"k": 2}
