"""``policy suggest`` on generated traffic with known distributions: the budgets are the formula,
the rules are what the runs show, and the suggested policy passes the successful runs it came from."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from fractions import Fraction

import pytest
import yaml

from otel_traj.cost import run_cost
from otel_traj.grader import Grader
from otel_traj.policy import Scope, parse_policy
from otel_traj.policy.suggest import SuggestSettings, succeeded, suggest
from otel_traj.policy.suggest_rules import looks_like_a_write
from otel_traj.policy.suggest_yaml import render_yaml
from otel_traj.trajectory import Trajectory
from tests.suggest_traffic import percentile, traffic

SCOPE = Scope.model_validate({"subject": {"attributes": ["app.customer_id"]}})


def _agent(text: str, name: str = "billing_agent") -> dict[str, object]:
    document = yaml.safe_load(text)
    section: dict[str, object] = document["agents"][name]
    return section


def _measures(run: Trajectory) -> dict[str, Fraction]:
    return {
        "max_tool_calls": Fraction(len(run.tool_calls)),
        "max_model_turns": Fraction(len(run.model_calls)),
        "max_total_tokens": Fraction(run.tokens.input + run.tokens.output),
        "max_duration_s": Fraction(str(round((run.end_ns - run.start_ns) / 1e9, 3))),
    }


@pytest.mark.parametrize(("p", "factor"), [(90, 1.5), (50, 2.0), (99, 1.1), (75, 1.25)])
def test_each_budget_is_the_ceiling_of_factor_times_the_percentile_of_successful_runs(
    p: int, factor: float
) -> None:
    runs = traffic()
    good = [r for r in runs if r.final_answer and all(c.ok for c in r.tool_calls)]
    assert 240 < len(good) < len(runs)  # the failed runs are there, and left out
    text = render_yaml(suggest(runs, SuggestSettings(percentile=p, factor=factor)))
    budget = _agent(text)["budget"]
    assert isinstance(budget, dict)
    for field in ("max_tool_calls", "max_model_turns", "max_total_tokens", "max_duration_s"):
        values = [_measures(r)[field] for r in good]
        expected = max(math.ceil(Fraction(str(factor)) * percentile(values, p)), math.ceil(max(values)))
        assert budget[field] == expected, field
    # With these distributions the largest successful run is within the formula at p90 x 1.5.
    if (p, factor) == (90, 1.5):
        assert "raised" not in text


def test_comments_give_the_sample_size_and_the_observed_p50_and_p90() -> None:
    runs = traffic()
    good = [r for r in runs if succeeded(r)]
    tool_calls = [Fraction(len(r.tool_calls)) for r in good]
    line = next(x for x in render_yaml(suggest(runs)).splitlines() if "max_tool_calls:" in x)
    p50, p90 = percentile(tool_calls, 50), percentile(tool_calls, 90)
    assert f"1.5 x p90 of {len(good)} successful runs" in line
    assert f"p50 {float(p50):g}, p90 {float(p90):g}" in line


def test_a_successful_outlier_raises_the_budget_and_says_so() -> None:
    runs = traffic()
    big = next(r for r in runs if succeeded(r))
    outlier = replace(big, trace_id=10_000, tool_calls=big.tool_calls * 10)
    text = render_yaml(suggest([*runs, outlier]))
    line = next(x for x in text.splitlines() if "max_tool_calls:" in x)
    assert line.split("#")[0].strip() == f"max_tool_calls: {len(outlier.tool_calls)}"
    assert "to the largest successful run" in line


def test_tools_order_scope_contracts_and_repeats_are_what_the_runs_show() -> None:
    text = render_yaml(suggest(traffic(), SuggestSettings(scope=SCOPE)))
    agent = _agent(text)
    tools = agent["tools"]
    assert isinstance(tools, dict)
    assert tools["allow"] == ["get_customer", "get_weather", "poll_status", "search_orders", "send_email"]
    assert "side_effect candidates (their names suggest writes; not set): send_email" in text
    assert "side_effect" not in str(tools["contracts"])
    rules = {(r["before"], r["after"]) for r in agent["order"]}  # type: ignore[attr-defined]
    assert {
        ("get_customer", "search_orders"),
        ("get_customer", "send_email"),
        ("search_orders", "send_email"),
    } <= rules
    # One run in five sends the email without polling: the order check would fail those runs.
    assert ("poll_status", "send_email") not in rules
    # Requested in one model turn: parallel, so no order either way.
    assert not rules & {("get_customer", "get_weather"), ("get_weather", "get_customer")}
    # Scoped: customer_id always equals the subject; account_ref only in about 90 % of its calls.
    assert agent["scope"] == {
        "subject": {"attributes": ["app.customer_id"]},
        "arguments": {"get_customer": ["customer_id"], "search_orders": ["customer_id"]},
    }
    search = tools["contracts"]["search_orders"]["schema"]
    assert search["required"] == ["customer_id", "page"]
    assert search["properties"]["page"] == {"type": "integer"}
    assert set(search["properties"]) == {"account_ref", "customer_id", "page", "status"}
    assert agent["repeats"] == {"exempt": ["poll_status"]}


def test_the_suggested_policy_is_valid_and_passes_the_successful_runs_it_came_from() -> None:
    runs = traffic()
    text = render_yaml(suggest(runs, SuggestSettings(scope=SCOPE)))
    grader = Grader(parse_policy(yaml.safe_load(text), "suggested.yaml"))
    verdicts = [grader.grade(r) for r in runs if succeeded(r)]
    failures = {(c.name, c.reason) for v in verdicts for c in v.checks if c.status == "fail"}
    assert failures == set()
    assert all(any(c.name == "budget" and c.status == "pass" for c in v.checks) for v in verdicts)


def test_the_same_runs_give_the_same_text_in_any_order() -> None:
    runs = traffic()
    shuffled = list(runs)
    random.Random(3).shuffle(shuffled)
    settings = SuggestSettings(scope=SCOPE)
    assert render_yaml(suggest(runs, settings)) == render_yaml(suggest(shuffled, settings))


def test_an_agent_with_too_few_successful_runs_is_left_out_with_a_note() -> None:
    runs = traffic() + traffic(runs=12, seed=1, agent="tiny_agent")
    suggestion = suggest(runs, SuggestSettings(min_runs=20))
    assert [a.agent for a in suggestion.agents] == ["billing_agent"]
    (note,) = suggestion.notes
    assert note.startswith("agent tiny_agent: ") and "fewer than --min-runs 20: left out" in note
    assert "tiny_agent" not in render_yaml(suggestion)


def test_an_order_rule_needs_min_runs_runs_calling_both_and_one_counterexample_breaks_it() -> None:
    runs = [r for r in traffic() if succeeded(r)]
    assert any(o.before == "get_customer" for o in suggest(runs).agents[0].order)
    few = suggest(runs, SuggestSettings(min_runs=len(runs) + 1))
    assert few.agents == []
    # One run that sends the email before looking the customer up breaks get_customer -> send_email.
    first = runs[0]
    email = next(c for c in first.tool_calls if c.name == "send_email")
    early = replace(email, start_ns=first.start_ns - 20, end_ns=first.start_ns - 10, turn=-1)
    swapped = replace(first, tool_calls=[early, *(c for c in first.tool_calls if c is not email)])
    order = {(o.before, o.after) for o in suggest([swapped, *runs[1:]]).agents[0].order}
    assert ("get_customer", "send_email") not in order
    assert ("get_customer", "search_orders") in order


def test_scope_follows_min_support() -> None:
    runs = traffic()
    loose = suggest(runs, SuggestSettings(scope=SCOPE, min_support=0.5)).agents[0].scope
    assert loose is not None
    assert ("search_orders", "account_ref") in {(f.tool, f.argument) for f in loose}
    finding = next(f for f in loose if f.argument == "account_ref")
    assert 0.8 < finding.matching / finding.carrying < 0.95


def test_scope_from_a_pattern_in_the_user_input() -> None:
    pattern = Scope.model_validate({"subject": {"pattern": r"C\d{3}"}})
    runs = [replace(r, attributes={}) for r in traffic()]
    text = render_yaml(suggest(runs, SuggestSettings(scope=pattern)))
    assert _agent(text)["scope"]["subject"] == {"pattern": r"C\d{3}"}  # type: ignore[index]
    assert 'pattern: "C\\\\d{3}"' in text


@pytest.mark.parametrize(
    ("name", "write"),
    [
        ("create_refund_request", True),
        ("sendEmail", True),
        ("Delete-User", True),
        ("list_invoices", False),
        ("get_subscription", False),
        ("poll_status", False),
        ("reset", True),
    ],
)
def test_write_candidates_by_the_verbs_in_the_name(name: str, write: bool) -> None:
    assert looks_like_a_write(name) is write


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"percentile": 100}, "percentile must be from 1 to 99 (got 100)"),
        ({"factor": 0}, "factor must be above 0 (got 0)"),
        ({"min_runs": 0}, "min_runs must be at least 1 (got 0)"),
        ({"min_support": 1.5}, "min_support must be above 0 and at most 1 (got 1.5)"),
    ],
)
def test_invalid_settings_are_refused_naming_the_setting(settings: dict[str, float], problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        SuggestSettings(**settings)  # type: ignore[arg-type]


def test_tool_names_that_yaml_would_misread_are_quoted() -> None:
    runs = [
        replace(
            r,
            tool_calls=[replace(c, name="yes" if c.name == "get_weather" else c.name) for c in r.tool_calls],
        )
        for r in traffic(runs=40)
    ]
    text = render_yaml(suggest(runs, SuggestSettings(min_runs=5)))
    assert '- "yes"' in text
    assert "yes" in parse_policy(yaml.safe_load(text)).agents["billing_agent"].tools.allow  # type: ignore[union-attr]


def test_the_cost_budget_is_the_formula_in_millionths_of_a_dollar() -> None:
    priced = [
        replace(r, model_calls=[replace(m, model="gpt-4o-mini", provider="openai") for m in r.model_calls])
        for r in traffic()
    ]
    good = [r for r in priced if succeeded(r)]
    costs = [Fraction(run_cost(r).total_usd or 0) for r in good]
    assert all(costs)
    text = render_yaml(suggest(priced))
    expected = Fraction(math.ceil(Fraction(3, 2) * percentile(costs, 90) * 10**6), 10**6)
    budget = _agent(text)["budget"]
    assert isinstance(budget, dict)
    assert budget["max_cost_usd"] == float(expected)
    grader = Grader(parse_policy(yaml.safe_load(text)))
    budgets = [c for r in good for c in grader.grade(r).checks if c.name == "budget"]
    assert budgets and all(c.status == "pass" and "cost $" in c.reason for c in budgets)
    # Unpriced runs (no model name) get no cost limit.
    assert "max_cost_usd" not in render_yaml(suggest(traffic()))
