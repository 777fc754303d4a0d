"""``suggest_policy`` (``otel-traj policy suggest`` over the store) and ``check_policy`` (``otel-traj
policy check`` on a policy's text)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from otel_traj.mcp.bounds import clip
from otel_traj.mcp.errors import ToolInputError
from otel_traj.mcp.store import Store, since_ns
from otel_traj.policy import PolicyError
from otel_traj.policy.loader import parse_policy_text

# A policy of many agents and tools is longer than a text of a result: it has its own cap.
MAX_POLICY_CHARS = 50_000


class AgentRuns(BaseModel):
    agent: str
    runs: int
    successful: int


class Suggested(BaseModel):
    policy: str | None = Field(description="the suggested policy (YAML, each rule commented), or null")
    agents: list[AgentRuns] = Field(description="the agents it has rules for")
    notes: list[str] = Field(description="agents or runs left out, and why")
    runs: int = Field(description="runs read")


class Problem(BaseModel):
    field: str = Field(description="dotted path of the field, empty for the whole document")
    problem: str


class PolicyCheck(BaseModel):
    valid: bool
    policy_version: str | None = Field(description="version@content-hash, as verdicts record it")
    agents: list[str] = Field(description="agents with their own section")
    problems: list[Problem]


def suggest_policy(
    store: Store,
    *,
    agent: str | None,
    since: str | None,
    percentile: int,
    factor: float,
    min_runs: int,
    min_support: float,
    subject_attributes: list[str],
    subject_pattern: str | None,
) -> Suggested:
    from otel_traj.policy.models import Scope
    from otel_traj.policy.suggest import SuggestSettings, suggest
    from otel_traj.policy.suggest_yaml import render_yaml
    from otel_traj.traffic import TrafficError, runs_from_store, select

    scope = None
    if subject_attributes or subject_pattern:
        subject = {"attributes": subject_attributes, "pattern": subject_pattern}
        try:
            scope = Scope.model_validate({"subject": subject})
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise ToolInputError(f"subject_pattern {subject_pattern!r}: {problem}") from None
    try:
        settings = SuggestSettings(percentile, factor, min_runs, min_support, scope)
    except ValueError as exc:
        raise ToolInputError(str(exc)) from None
    start = since_ns(since)
    try:
        runs = runs_from_store(store.path, start, agent)
    except TrafficError as exc:
        raise ToolInputError(str(exc)) from None
    suggestion = suggest(select(runs, start, agent), settings)
    return Suggested(
        policy=clip(render_yaml(suggestion), MAX_POLICY_CHARS) if suggestion.agents else None,
        agents=[AgentRuns(agent=a.agent, runs=a.runs, successful=a.successful) for a in suggestion.agents],
        notes=clip(suggestion.notes),
        runs=suggestion.runs,
    )


def check_policy(text: str, syntax: Literal["yaml", "json"]) -> PolicyCheck:
    try:
        policy = parse_policy_text(text, "policy", as_json=syntax == "json")
    except PolicyError as exc:
        problems = [Problem(field=path, problem=clip(message)) for path, message in exc.problems]
        return PolicyCheck(valid=False, policy_version=None, agents=[], problems=problems)
    return PolicyCheck(
        valid=True, policy_version=policy.policy_version, agents=list(policy.agents), problems=[]
    )
