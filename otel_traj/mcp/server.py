"""The MCP server over the verdict store: its tools, their typed inputs and their JSON results.

Every tool reads; none writes (the store is opened read-only for each call). Values are as the store
holds them, already redacted when they were stored.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from otel_traj.mcp import policies, release, runs
from otel_traj.mcp.bounds import DEFAULT_LIMIT, MAX_LIMIT, check_limit
from otel_traj.mcp.store import Store
from otel_traj.verdict import Outcome

INSTRUCTIONS = (
    "Verdicts of otel-traj on AI-agent runs (trajectories graded from OpenTelemetry spans). "
    "list_runs finds runs (filter by agent, outcome, failed check, time); get_run shows one with its "
    "trajectory, checks and offending steps; compare_versions applies the release gate to two sets of "
    "stored runs; suggest_policy and check_policy help write the policy the runs are graded with. "
    "Results are paged: pass next_cursor back for more."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)

Since = Annotated[
    str | None, Field(description="runs started since: a duration ago (1h, 30m, 2d) or an ISO 8601 time")
]
Agent = Annotated[str | None, Field(description="only this agent (the agent name, else the service name)")]
FailedCheckName = Annotated[
    str | None, Field(description="only runs in which this check failed, e.g. scope, budget")
]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description=f"items per page, at most {MAX_LIMIT}")]
Cursor = Annotated[str | None, Field(description="next_cursor of the previous page")]
Filters = Annotated[
    dict[str, str],
    Field(
        description="KEY: VALUE a run must have: a verdict field (agent, service_name, service_version, "
        "conversation_id), versions.KEY (versions.agent, versions.prompt) or attributes.KEY",
        examples=[{"service_version": "1.2"}],
    ),
]


def build_server(store: Store) -> MCPServer:
    from importlib.metadata import version

    server: MCPServer = MCPServer("otel-traj", version=version("otel-traj"), instructions=INSTRUCTIONS)

    @server.tool(annotations=READ_ONLY)
    def list_runs(
        agent: Agent = None,
        outcome: Annotated[Outcome | None, Field(description="only runs with this outcome")] = None,
        failed_check: FailedCheckName = None,
        since: Since = None,
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> runs.RunPage:
        """Graded runs, oldest first: trace id, agent, outcome, score and the failed checks with their
        reasons and offending step ids."""
        return runs.list_runs(
            store,
            agent=agent,
            outcome=outcome,
            failed_check=failed_check,
            since=since,
            limit=check_limit(limit),
            cursor=cursor,
        )

    @server.tool(annotations=READ_ONLY)
    def get_run(
        trace_id: Annotated[str, Field(description="the run's trace id, 32 hex digits")],
        cursor: Cursor = None,
    ) -> runs.RunDetail:
        """One run's whole verdict: its trajectory (tool calls, model calls, tokens, cost, answer),
        every check with its reason, and the steps each failed check names."""
        return runs.get_run(store, trace_id=trace_id, cursor=cursor)

    @server.tool(annotations=READ_ONLY)
    def list_conversations(
        agent: Agent = None,
        outcome: Annotated[Outcome | None, Field(description="only conversations with this outcome")] = None,
        failed_check: Annotated[
            str | None, Field(description="only conversations in which this check failed")
        ] = None,
        since: Since = None,
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> runs.ConversationPage:
        """Graded conversations (the traces sharing a conversation id), oldest first, with their traces
        and failed conversation checks."""
        return runs.list_conversations(
            store,
            agent=agent,
            outcome=outcome,
            failed_check=failed_check,
            since=since,
            limit=check_limit(limit),
            cursor=cursor,
        )

    @server.tool(annotations=READ_ONLY)
    def compare_versions(
        baseline: Filters,
        candidate: Filters,
        since: Since = None,
        max_regression: Annotated[
            float, Field(ge=0, description="allowed relative rise of an efficiency figure")
        ] = 0.2,
    ) -> release.Comparison:
        """The release gate over stored runs: pairs the candidate's runs with the baseline's (by golden
        case, conversation id or user input) and allows the release only if no run became unsafe, no
        more runs or error checks fail, pass^k did not drop and efficiency stayed within max_regression."""
        return release.compare_versions(
            store, baseline=baseline, candidate=candidate, since=since, max_regression=max_regression
        )

    @server.tool(annotations=READ_ONLY)
    def suggest_policy(
        agent: Agent = None,
        since: Since = None,
        percentile: Annotated[int, Field(ge=1, le=99, description="percentile of successful runs")] = 90,
        factor: Annotated[float, Field(gt=0, description="budget = factor x percentile")] = 1.5,
        min_runs: Annotated[int, Field(ge=1, description="successful runs an agent needs")] = 20,
        min_support: Annotated[
            float, Field(gt=0, le=1, description="share of calls to scope an argument")
        ] = 0.95,
        subject_attributes: Annotated[
            list[str] | None, Field(description="span attributes holding the run's subject")
        ] = None,
        subject_pattern: Annotated[str | None, Field(description="pattern of the subject")] = None,
    ) -> policies.Suggested:
        """A first policy from the stored runs, as `otel-traj policy suggest --store` writes it: budgets
        from the successful runs, tools, order rules, scoped arguments, argument schemas."""
        return policies.suggest_policy(
            store,
            agent=agent,
            since=since,
            percentile=percentile,
            factor=factor,
            min_runs=min_runs,
            min_support=min_support,
            subject_attributes=subject_attributes or [],
            subject_pattern=subject_pattern,
        )

    @server.tool(annotations=READ_ONLY)
    def check_policy(
        text: Annotated[str, Field(description="the policy document")],
        syntax: Annotated[Literal["yaml", "json"], Field(description="the document's syntax")] = "yaml",
    ) -> policies.PolicyCheck:
        """Validate a policy as `otel-traj policy check` does: each problem names its field."""
        return policies.check_policy(text, syntax)

    return server
