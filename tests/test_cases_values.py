"""Semantic argument equality and the argument modes of golden cases."""

from __future__ import annotations

import json

import pytest

from otel_traj.cases.model import CaseFileError, parse_cases
from otel_traj.cases.values import compare_args, is_nonempty, values_equal


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        (199, "199"),
        (199, 199.0),
        ("199", 199.0),
        ("199.0", "199"),
        (0.1 + 0.2, 0.3),
        ("  INV-1002 ", "INV-1002"),
        (True, "true"),
        ({"a": 1, "b": [1, "2"]}, {"b": ["1", 2.0], "a": "1"}),
        ({"filters": {"status": "paid"}}, {"filters": '{"status": "paid"}'}),
        ([{"id": 1}], '[{"id": "1"}]'),
        (None, None),
    ],
)
def test_semantically_equal_values(expected: object, actual: object) -> None:
    assert values_equal(expected, actual)


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        (199, "200"),
        ("007", 7),
        ("C023", "c023"),
        (True, 1),
        (1, True),
        (None, ""),
        ({"a": 1}, {"a": 1, "b": 2}),
        ([1, 2], [2, 1]),
        ("nan", float("nan")),
        ("{not json", {"a": 1}),
    ],
)
def test_different_values(expected: object, actual: object) -> None:
    assert not values_equal(expected, actual)


def test_nonempty() -> None:
    assert is_nonempty("duplicate charge")
    assert is_nonempty(0)
    assert not is_nonempty("   ")
    assert not is_nonempty(None)
    assert not is_nonempty([])


EXPECTED = {"invoice_id": "INV-1002", "amount_yuan": 199}


def test_exact_mode() -> None:
    assert compare_args(EXPECTED, {"invoice_id": "INV-1002", "amount_yuan": "199.0"}, "exact").ok
    extra = compare_args(EXPECTED, {"invoice_id": "INV-1002", "amount_yuan": 199, "note": "x"}, "exact")
    assert [(m.key, m.problem) for m in extra.mismatches] == [("note", "unexpected")]
    missing = compare_args(EXPECTED, {"invoice_id": "INV-1002"}, "exact")
    assert [(m.key, m.problem) for m in missing.mismatches] == [("amount_yuan", "missing")]
    assert missing.similarity == 0.5


def test_superset_mode_allows_extra_actual_keys() -> None:
    assert compare_args(EXPECTED, {**EXPECTED, "note": "x"}, "superset").ok
    result = compare_args(EXPECTED, {"invoice_id": "INV-1002", "amount_yuan": 99}, "superset")
    assert [(m.key, m.problem, m.expected, m.actual) for m in result.mismatches] == [
        ("amount_yuan", "different", 199, 99)
    ]
    assert result.mismatches[0].describe() == "amount_yuan expected 199, got 99"


def test_subset_mode_allows_missing_keys_but_not_unexpected_ones() -> None:
    assert compare_args(EXPECTED, {"invoice_id": "INV-1002"}, "subset").ok
    assert compare_args(EXPECTED, {}, "subset").ok
    result = compare_args(EXPECTED, {"invoice_id": "INV-1002", "note": "x"}, "subset")
    assert [(m.key, m.problem) for m in result.mismatches] == [("note", "unexpected")]
    assert not compare_args(EXPECTED, {"invoice_id": "INV-9999"}, "subset").ok


def test_ignore_mode() -> None:
    assert compare_args(EXPECTED, {"whatever": 1}, "ignore").ok


def test_key_list_compares_only_those_keys() -> None:
    rule = ("invoice_id",)
    assert compare_args(EXPECTED, {"invoice_id": "INV-1002", "amount_yuan": 5, "x": 1}, rule).ok
    result = compare_args(EXPECTED, {"invoice_id": "INV-1001", "amount_yuan": 199}, rule)
    assert [m.key for m in result.mismatches] == ["invoice_id"]


def test_nonempty_keys_need_a_value_not_an_equal_one() -> None:
    expected = {**EXPECTED, "reason": "charged twice"}
    nonempty = frozenset({"reason"})
    assert compare_args(expected, {**EXPECTED, "reason": "duplicate charge"}, "exact", nonempty).ok
    empty = compare_args(expected, {**EXPECTED, "reason": "  "}, "exact", nonempty)
    assert [(m.key, m.problem) for m in empty.mismatches] == [("reason", "empty")]
    absent = compare_args(expected, dict(EXPECTED), "superset", nonempty)
    assert [(m.key, m.problem) for m in absent.mismatches] == [("reason", "missing")]


BOOKING = {"room": "A1", "time": {"start": "09:00", "end": "10:00"}, "people": [{"id": 7}]}


def test_listed_keys_may_be_dotted_paths_into_nested_values() -> None:
    rule = ("room", "time.start", "people.0.id")
    other_end = {**BOOKING, "time": {"start": "09:00", "end": "11:00"}}
    assert compare_args(BOOKING, other_end, rule).ok
    late = compare_args(BOOKING, {**BOOKING, "time": {"start": "09:30", "end": "10:00"}}, rule)
    assert [(m.key, m.problem) for m in late.mismatches] == [("time.start", "different")]
    assert late.mismatches[0].describe() == "time.start expected 09:00, got 09:30"
    # Nested values recorded as JSON text are read as the structure they encode.
    as_text = {**BOOKING, "time": '{"start": "09:00"}', "people": '[{"id": "7"}]'}
    assert compare_args(BOOKING, as_text, rule).ok
    other_person = compare_args(BOOKING, {**BOOKING, "people": [{"id": 8}]}, rule)
    assert [m.key for m in other_person.mismatches] == ["people.0.id"]
    # A key that itself holds the dot is that key.
    assert compare_args({"time.start": 9}, {"time.start": "9"}, ("time.start",)).ok


def test_a_listed_key_missing_on_one_side_is_a_mismatch_naming_the_side() -> None:
    rule = ("time.start",)
    no_start = compare_args(BOOKING, {**BOOKING, "time": {"end": "10:00"}}, rule)
    assert [(m.key, m.problem) for m in no_start.mismatches] == [("time.start", "missing")]
    assert no_start.mismatches[0].describe() == "time.start missing from the call (expected 09:00)"
    no_time = compare_args(BOOKING, {"room": "A1"}, rule)
    assert [(m.key, m.problem) for m in no_time.mismatches] == [("time.start", "missing")]
    not_expected = compare_args({"room": "A1"}, BOOKING, rule)
    assert [(m.key, m.problem) for m in not_expected.mismatches] == [("time.start", "unexpected")]
    assert not_expected.mismatches[0].describe() == "time.start=09:00 not in the expected args"
    # None is a value: a listed key set to null on one side and absent on the other differs.
    assert not compare_args({"time": {"start": None}}, {"time": {}}, rule).ok
    # Absent from both: the expected call gives no value and the call has none.
    assert compare_args({"room": "A1"}, {"room": "B2"}, rule).ok
    assert not compare_args({"room": "A1"}, {"room": "B2"}, ("room", "time.start")).ok


def test_dotted_paths_in_a_case_file() -> None:
    tools = [{"name": "book", "args": BOOKING}]
    [golden] = parse_cases(
        [
            json.dumps(
                {"case_id": "b", "input": "x", "expected_tools": tools, "tool_args": {"book": ["time.start"]}}
            )
        ]
    )
    assert golden.args_rule("book") == ("time.start",)
    bad = {"case_id": "b", "input": "x", "expected_tools": tools, "tool_args": {"book": ["time..start"]}}
    with pytest.raises(CaseFileError, match=r"tool_args.book: 'time..start' is not an argument key"):
        parse_cases([json.dumps(bad)])
