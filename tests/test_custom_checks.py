"""Custom checks: named in the policy (or registered as entry points), imported at load, run with
the built-in checks' contract; a broken one is skipped and counted, never the run."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from otel_traj.cases import CaseFileError, GoldenCase, match_trajectory, parse_cases
from otel_traj.grader import Grader
from otel_traj.policy import PolicyError, load_policy, parse_policy
from otel_traj.sinks.prometheus_health import register_pipeline_health
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult
from tests.support_trajectories import REFUND, call, clean_run, trajectory

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "policies" / "custom_checks.yaml"
REFUNDS = "examples.custom_checks.refunds:refund_matches_invoice"


def custom(result_of: list[CheckResult], name: str) -> CheckResult:
    return next(c for c in result_of if c.name == name)


def overcharged_run(amount: float = 500) -> Trajectory:
    return trajectory(
        [
            call(1, "list_invoices", {"customer_id": "C023"}),
            call(2, "create_refund_request", {**REFUND, "amount_yuan": amount}),
        ]
    )


def test_the_example_check_passes_a_clean_run_and_fails_an_overcharge() -> None:
    grader = Grader(load_policy(EXAMPLE))
    clean = grader.grade(clean_run())
    assert custom(clean.checks, "refund_matches_invoice").status == "pass"
    assert clean.outcome == "pass"
    bad = grader.grade(overcharged_run())
    result = custom(bad.checks, "refund_matches_invoice")
    assert (result.status, result.severity, result.steps) == ("fail", "error", ("s2",))
    assert "refund of 500 for INV-1002, invoiced 199" in result.reason
    assert bad.outcome == "fail"


def test_config_reaches_the_function() -> None:
    loose = {"name": "refund_matches_invoice", "function": REFUNDS, "config": {"tolerance": 400}}
    grader = Grader(parse_policy({"defaults": {"custom": [loose]}}))
    assert custom(grader.grade(overcharged_run()).checks, "refund_matches_invoice").status == "pass"


def test_uncaptured_arguments_are_skipped_with_the_reason() -> None:
    run = trajectory([call(1, "list_invoices", {"customer_id": "C023"}), call(2, "create_refund_request")])
    result = custom(Grader(load_policy(EXAMPLE)).grade(run).checks, "refund_matches_invoice")
    assert (result.status, result.reason) == ("skipped", "refund arguments not captured")


@pytest.mark.parametrize(
    ("function", "error"),
    [
        ("tests.plugins.broken:raises", "ZeroDivisionError: boom"),
        ("tests.plugins.broken:returns_text", "returned str, not a CheckResult"),
    ],
)
def test_a_broken_check_is_skipped_and_counted_and_the_rest_still_grade(function: str, error: str) -> None:
    policy = parse_policy(
        {
            "defaults": {
                "custom": [
                    {
                        "name": "broken",
                        "function": function,
                        "severity": "critical",
                        "config": {"message": "boom"},
                    },
                    {"name": "refund_matches_invoice", "function": REFUNDS},
                ],
                "budget": {"max_tool_calls": 1},
            }
        }
    )
    grader = Grader(policy)
    verdicts = grader.grade_all([clean_run(), clean_run()])
    for verdict in verdicts:
        broken = custom(verdict.checks, "broken")
        assert (broken.status, broken.severity) == ("skipped", "critical")
        assert broken.reason == f"custom check {function} failed: {error}"
        assert custom(verdict.checks, "refund_matches_invoice").status == "pass"
        assert custom(verdict.checks, "budget").status == "fail"
        assert verdict.outcome == "pass_with_warnings"
    assert grader.stats.check_errors == {"broken": 2}
    registry = CollectorRegistry()
    register_pipeline_health(registry, grader.stats)
    assert registry.get_sample_value("otel_traj_check_errors_total", {"check": "broken"}) == 2


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("no_such_module.checks:f", "cannot import 'no_such_module.checks:f': ModuleNotFoundError"),
        ("examples.custom_checks.refunds:nope", "'examples.custom_checks.refunds' has no attribute 'nope'"),
        ("examples.custom_checks.refunds", "is not a 'module:function' path"),
        ("examples.custom_checks.refunds:json", "is a module, not a function"),
    ],
)
def test_an_import_error_names_the_file_the_entry_and_the_error(
    tmp_path: Path, function: str, message: str
) -> None:
    path = write(
        tmp_path,
        f"""
        agents:
          support_agent:
            custom:
              - {{name: ok, function: "{REFUNDS}"}}
              - {{name: mine, function: "{function}"}}
        """,
    )
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: agents.support_agent.custom[1].function: ")
    assert message in text


def test_a_custom_check_may_not_take_a_built_in_name(tmp_path: Path) -> None:
    path = write(tmp_path, f'defaults: {{custom: [{{name: scope, function: "{REFUNDS}"}}]}}\n')
    with pytest.raises(PolicyError, match=r"defaults\.custom\[0\]: name 'scope' is a built-in check's"):
        load_policy(path)


def test_agents_inherit_or_replace_the_default_custom_checks() -> None:
    policy = parse_policy(
        {
            "defaults": {"custom": [{"name": "refund_matches_invoice", "function": REFUNDS}]},
            "agents": {"other": {"custom": []}, "support_agent": {"budget": {"max_tool_calls": 9}}},
        }
    )
    assert [r.name for r in policy.agents["support_agent"].custom] == ["refund_matches_invoice"]
    assert policy.agents["other"].custom == ()


def test_a_check_registered_as_an_entry_point_is_found_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "refund_checks-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: refund-checks\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[otel_traj.checks]\nrefund_matches_invoice = {REFUNDS}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    policy = parse_policy(
        {"defaults": {"custom": [{"name": "refund_matches_invoice", "severity": "warning"}]}}
    )
    rule = policy.defaults.custom[0]
    assert rule.function.path == REFUNDS
    result = custom(Grader(policy).grade(overcharged_run()).checks, "refund_matches_invoice")
    assert (result.status, result.severity) == ("fail", "warning")
    with pytest.raises(PolicyError, match=r"no entry point 'unknown' in group 'otel_traj.checks'"):
        parse_policy({"defaults": {"custom": [{"name": "unknown"}]}}, "p.yaml")


def test_the_policy_version_covers_the_function_and_its_config() -> None:
    def version(config: dict[str, object]) -> str:
        rule = {"name": "refund_matches_invoice", "function": REFUNDS, "config": config}
        return parse_policy({"defaults": {"custom": [rule]}}).policy_version

    assert version({"tolerance": 1}) != version({"tolerance": 2})
    assert version({"tolerance": 1}) == version({"tolerance": 1})


MATCHER = {"function": "examples.custom_checks.refunds:same_refund"}


def refund_case(rule: object) -> GoldenCase:
    return GoldenCase.model_validate(
        {
            "case_id": "c",
            "input": "x",
            "expected_tools": [{"name": "create_refund_request", "args": REFUND}],
            "tool_args": {"create_refund_request": rule},
        }
    )


def refund_run(**arguments: object) -> Trajectory:
    return trajectory([call(1, "create_refund_request", {**REFUND, **arguments})])


def test_a_golden_case_argument_matcher_decides_for_its_tool() -> None:
    case = refund_case(MATCHER)
    assert match_trajectory(refund_run(reason="another text", amount_yuan=199.5), case).passed
    rejected = match_trajectory(refund_run(amount_yuan=250), case)
    assert not rejected.passed
    assert "arguments rejected by examples.custom_checks.refunds:same_refund" in rejected.reason()
    # The same call under the default exact rule: the free-text reason differs.
    assert not match_trajectory(refund_run(reason="another text"), refund_case("exact")).passed


def test_a_matcher_that_raises_is_a_mismatch_saying_so() -> None:
    result = match_trajectory(refund_run(), refund_case({"function": "tests.plugins.broken:matcher_raises"}))
    assert not result.passed
    assert "<raised KeyError: 'amount_yuan'>" in result.reason()


def test_a_case_naming_a_missing_matcher_is_a_case_file_error() -> None:
    line = json.dumps(
        {
            "case_id": "c",
            "input": "x",
            "expected_tools": [{"name": "t"}],
            "tool_args": {"t": {"function": "nope:f"}},
        }
    )
    with pytest.raises(CaseFileError, match=r"cases.jsonl:1: tool_args.t: .*cannot import 'nope:f'"):
        parse_cases([line], "cases.jsonl")
