"""``otel-traj policy check FILE`` validates a policy; ``otel-traj policy schema`` prints its JSON Schema;
``otel-traj policy suggest`` derives one from observed runs (``otel_traj.cli.policy_suggest``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from otel_traj.cli import policy_suggest
from otel_traj.policy import PolicyError, PolicyFile, load_policy

EXIT_OK = 0
EXIT_INVALID = 2


def _check(args: argparse.Namespace) -> int:
    try:
        policy = load_policy(args.file)
    except PolicyError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INVALID
    agents = ", ".join(policy.agents) or "none"
    print(f"{args.file}: valid policy version {policy.policy_version} (agent overrides: {agents})")
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    schema: dict[str, Any] = PolicyFile.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "otel-traj policy"
    print(json.dumps(schema, indent=2))
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "policy", help="validate a policy file, print its JSON Schema, or suggest one from observed runs"
    )
    actions = parser.add_subparsers(dest="policy_command", required=True)
    check = actions.add_parser("check", help="validate a YAML or JSON policy file (exit 2 if invalid)")
    check.add_argument("file", help="policy file (.yaml, .yml or .json)")
    check.set_defaults(run=_check)
    schema = actions.add_parser("schema", help="print the JSON Schema of the policy file")
    schema.set_defaults(run=_schema)
    policy_suggest.add_parser(actions)
