"""Policy files: validation errors name the file and the dotted field path; resolution per agent."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import fastjsonschema
import pytest
import yaml

from otel_traj.cli import policy as policy_cli
from otel_traj.policy import PolicyError, load_policy, parse_policy
from tests.support_trajectories import EXAMPLE_POLICY, example_policy, trajectory


def write(tmp_path: Path, text: str, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(path: Path) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    return info.value


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="otel-traj")
    policy_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


def test_example_policy_loads_with_the_issue_shape() -> None:
    policy = example_policy()
    support = policy.agents["support_agent"]
    assert support.budget is not None and support.budget.max_tool_calls == 6
    # The override replaced one key; the rest of the budget comes from defaults.
    assert support.budget.max_total_tokens == 30000 and support.budget.max_duration_s == 120
    assert policy.defaults.budget is not None and policy.defaults.budget.max_tool_calls == 8
    assert support.scope is not None and support.scope.arguments["list_invoices"] == ("customer_id",)
    assert support.severity.scope == "critical" and support.severity.budget == "warning"
    contract = support.contract("create_refund_request")
    assert contract is not None and contract.side_effect and contract.json_schema is not None
    assert policy.version == "1"


def test_unknown_key_names_file_and_dotted_path(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\nagents:\n  support_agent:\n    budget: {max_tool_cals: 6}\n")
    err = error_of(path)
    assert str(err) == f"{path}: agents.support_agent.budget.max_tool_cals: unknown key"


def test_wrong_type_names_file_path_and_value(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\nagents:\n  support_agent:\n    budget: {max_tool_calls: many}\n")
    message = str(error_of(path))
    assert message.startswith(f"{path}: agents.support_agent.budget.max_tool_calls: ")
    assert "valid integer" in message and "'many'" in message


def test_bad_regex_names_the_rule(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "defaults:\n  claims:\n"
        "    - {pattern: 'refund (submitted', requires_success: create_refund_request}\n",
    )
    message = str(error_of(path))
    assert message.startswith(f"{path}: defaults.claims[0].pattern: invalid regular expression")
    assert "missing )" in message


def test_bad_subject_pattern_and_bad_json_schema(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "defaults:\n  scope: {subject: {pattern: '['}}\n"
        "  tools: {contracts: {create_refund_request: {schema: {type: objectx}}}}\n",
    )
    problems = dict(error_of(path).problems)
    assert problems["defaults.scope.subject.pattern"].startswith("invalid regular expression")
    assert problems["defaults.tools.contracts.create_refund_request.schema"].startswith("invalid JSON Schema")


def test_invalid_yaml_and_unreadable_file(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, "defaults: {budget: [\n"))
    assert "invalid YAML at line" in str(err)
    assert "cannot read" in str(error_of(tmp_path / "missing.yaml"))
    assert "must be a mapping" in str(error_of(write(tmp_path, "- 1\n")))


def test_json_policy_and_content_hash_ignores_layout(tmp_path: Path) -> None:
    data = yaml.safe_load(EXAMPLE_POLICY.read_text())
    from_json = load_policy(write(tmp_path, json.dumps(data), "policy.json"))
    assert from_json.policy_version == example_policy().policy_version
    data["agents"]["support_agent"]["budget"]["max_tool_calls"] = 7
    changed = parse_policy(data)
    assert changed.content_hash != from_json.content_hash


def test_resolution_by_agent_then_service_name() -> None:
    policy = example_policy()
    support = policy.agents["support_agent"]
    assert policy.resolve(trajectory([], agent="support_agent")) is support
    by_service = replace(trajectory([], agent=None), service_name="support_agent")
    assert policy.resolve(by_service) is support
    assert policy.resolve(trajectory([], agent="billing_agent")) is policy.defaults


def test_sensitive_keys_for_sinks() -> None:
    policy = example_policy()
    assert policy.sensitive_keys("create_refund_request") == frozenset({"reason"})
    assert policy.is_sensitive("create_refund_request", "reason")
    assert policy.is_sensitive("anything", "api_key") and policy.is_sensitive("anything", "customer_email")
    assert policy.is_sensitive("anything", "card_number")
    assert not policy.is_sensitive("list_invoices", "customer_id")
    custom = parse_policy({"redact": {"keys": ["customer_id"], "patterns": []}})
    assert custom.is_sensitive("list_invoices", "customer_id") and not custom.is_sensitive("x", "password")


def test_cli_check_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("policy", "check", str(EXAMPLE_POLICY)) == 0
    assert "valid policy version 1@" in capsys.readouterr().out
    bad = write(tmp_path, "defaults: {severity: {scope: fatal}}\n")
    assert run_cli("policy", "check", str(bad)) == 2
    assert f"{bad}: defaults.severity.scope:" in capsys.readouterr().err


def test_cli_schema_accepts_the_example_and_rejects_unknown_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("policy", "schema") == 0
    validate = fastjsonschema.compile(json.loads(capsys.readouterr().out))
    validate(yaml.safe_load(EXAMPLE_POLICY.read_text()))
    with pytest.raises(fastjsonschema.JsonSchemaValueException):
        validate({"defaults": {"budgett": {}}})
