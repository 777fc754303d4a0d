"""``arguments``: each call's arguments validated against its tool's JSON Schema (compiled at load)."""

from __future__ import annotations

from fastjsonschema import JsonSchemaValueException

from otel_traj.checks.base import NOT_CAPTURED, count, failure, passed, skipped, step_id
from otel_traj.policy import Tools
from otel_traj.policy.models import CompiledSchema
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "arguments"


def _single_property(schema: CompiledSchema) -> str | None:
    properties = schema.source.get("properties")
    if isinstance(properties, dict) and len(properties) == 1:
        return str(next(iter(properties)))
    return None


def _explain(tool: str, exc: JsonSchemaValueException) -> str:
    # fastjsonschema names the failing value "data.<path>"; the reason names the argument instead.
    message = exc.message
    if message.startswith("data."):
        message = message[len("data.") :]
    elif message.startswith("data "):
        message = "arguments " + message[len("data ") :]
    return f"{tool}: {message} ({exc.rule})" if exc.rule else f"{tool}: {message}"


def check_arguments(traj: Trajectory, tools: Tools, severity: Severity = "error") -> CheckResult:
    problems: list[str] = []
    steps: list[str] = []
    validated = 0
    not_captured = 0
    for call in traj.tool_calls:
        contract = tools.contracts.get(call.name)
        if contract is None or contract.json_schema is None:
            continue
        schema = contract.json_schema
        arguments = call.arguments
        if arguments is None:
            if call.arguments_text is None:
                not_captured += 1
                continue
            # Some instrumentations record a one-argument tool's input as the bare value.
            only = _single_property(schema)
            if only is None:
                snippet = " ".join(call.arguments_text.split())[:40]
                problems.append(f"{call.name}: arguments are not JSON ({snippet!r})")
                steps.append(step_id(call))
                continue
            arguments = {only: call.arguments_text}
        validated += 1
        try:
            schema.validate(arguments)
        except JsonSchemaValueException as exc:
            problems.append(_explain(call.name, exc))
            steps.append(step_id(call))
    if problems:
        return failure(NAME, severity, problems, steps)
    if not validated and not_captured:
        return skipped(NAME, severity, f"{NOT_CAPTURED} for {not_captured} calls with a schema")
    missing = f" ({NOT_CAPTURED} for {not_captured})" if not_captured else ""
    return passed(NAME, severity, f"{count(validated, 'call')} valid against the schema{missing}")
