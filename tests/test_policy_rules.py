"""The deeper checks' policy sections: in `otel-traj policy schema`, and malformed input named by
file, field and problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_traj.cli import main
from otel_traj.policy import PolicyError, load_policy

CONTRACT = "defaults.tools.contracts.create_refund_request"


def test_schema_covers_the_new_sections(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy", "schema"]) == 0
    text = capsys.readouterr().out
    schema = json.loads(text)
    agent = json.dumps(schema)
    for key in ("postconditions", "relations", "confirmation", "injection", "efficiency", "equals_argument"):
        assert f'"{key}"' in agent, key


@pytest.mark.parametrize(
    ("body", "where", "problem"),
    [
        (
            "postconditions: [{path: '[?'}]",
            f"{CONTRACT}.postconditions[0].path",
            "invalid JMESPath expression '[?'",
        ),
        (
            "postconditions: [{path: status, in: [ok], equals_argument: status}]",
            f"{CONTRACT}.postconditions[0]",
            "give one of `in` and `equals_argument`, not both",
        ),
        (
            "postconditions: [{path: 'items[::0]', in: [ok]}]",
            f"{CONTRACT}.postconditions[0].path",
            "invalid JMESPath expression 'items[::0]': slice step cannot be 0",
        ),
        (
            "relations: [{argument: amount_yuan, op: '=<', earlier: list_invoices, path: amount_yuan}]",
            f"{CONTRACT}.relations[0].op",
            "Input should be '<', '<=', '==', '!=', '>=' or '>'",
        ),
    ],
)
def test_malformed_rules_name_file_field_and_problem(
    tmp_path: Path, body: str, where: str, problem: str
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(f"defaults:\n  tools:\n    contracts:\n      create_refund_request:\n        {body}\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    [line] = str(caught.value).splitlines()
    assert line.startswith(f"{path}: {where}: ") and problem in line


def test_malformed_sections_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "defaults:\n  injection: {patterns: ['(unclosed']}\n  efficiency: {max_wasted_turns: -1}\n"
    )
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith(
        f"{path}: defaults.injection.patterns[0]: invalid regular expression '(unclosed'"
    )
    assert lines[1].startswith(f"{path}: defaults.efficiency.max_wasted_turns: Input should be greater than")
