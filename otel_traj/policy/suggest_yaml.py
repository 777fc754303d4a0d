"""A suggestion as a policy file: the YAML that ``otel-traj policy check`` reads, with a comment on each
rule saying what it rests on (sample size, percentiles, support). Written as text, since YAML
libraries that keep comments on output are not needed for a file written once; values that are not
plain names are JSON strings, which YAML reads as the same strings.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction

import yaml

from otel_traj.policy.suggest import AgentSuggestion, BudgetFinding, Suggestion

_PLAIN = re.compile(r"[A-Za-z_][\w.\-/]*")
_INDENT = "  "


def name(text: str) -> str:
    """``text`` as a YAML scalar: plain when YAML reads it back as this very string, else quoted."""
    if _PLAIN.fullmatch(text) and yaml.safe_load(text) == text:
        return text
    return json.dumps(text, ensure_ascii=False)


def number(value: Fraction | int) -> str:
    """An integer as it is; a limit in millionths (a cost) as its exact decimal; else 6 digits."""
    value = Fraction(value)
    if value.denominator == 1:
        return str(value.numerator)
    if 10**6 % value.denominator == 0:
        return f"{value.numerator * 10**6 // value.denominator / 10**6:.6f}".rstrip("0")
    return f"{float(value):.6g}"


def _comment(text: str) -> str:
    return "  # " + " ".join(text.split())


def _budget_line(finding: BudgetFinding, factor: float, p: int) -> str:
    why = (
        f"{factor:g} x p{p} of {finding.runs} successful runs; "
        f"p50 {number(finding.p50)}, p90 {number(finding.p90)}"
    )
    if finding.limit > finding.formula:
        largest = number(finding.largest)
        why += f"; raised from {number(finding.formula)} to the largest successful run, {largest}"
    return f"{finding.field}: {number(finding.limit)}" + _comment(why)


def _block(lines: list[str], depth: int) -> list[str]:
    return [_INDENT * depth + line if line else line for line in lines]


def _tools(agent: AgentSuggestion) -> list[str]:
    lines = ["tools:", f"{_INDENT}allow:"]
    lines += [
        f"{_INDENT * 2}- {name(t.name)}" + _comment(f"in {t.runs} of {agent.runs} runs") for t in agent.tools
    ]
    writes = [t.name for t in agent.tools if t.side_effect_candidate]
    if writes:
        lines.append(
            f"{_INDENT}# side_effect candidates (their names suggest writes; not set): {', '.join(writes)}"
        )
    if agent.contracts:
        lines.append(f"{_INDENT}contracts:")
        for tool, (schema, calls) in agent.contracts.items():
            dumped = yaml.safe_dump(schema, sort_keys=True, default_flow_style=False, allow_unicode=True)
            lines.append(f"{_INDENT * 2}{name(tool)}:")
            how = "declared by the model requests," if tool in agent.declared else "inferred from"
            lines.append(f"{_INDENT * 3}schema:" + _comment(f"{how} {calls} successful calls"))
            lines += _block(dumped.splitlines(), 4)
    return lines


def _order(agent: AgentSuggestion, min_runs: int) -> list[str]:
    if not agent.order:
        why = f"no tool preceded another in every successful run calling it ({min_runs} runs at least)"
        return ["order: []" + _comment(why)]
    lines = ["order:"]
    for rule in agent.order:
        lines.append(
            f"{_INDENT}- {{before: {name(rule.before)}, after: {name(rule.after)}}}"
            + _comment(f"held in all {rule.support} successful runs calling {rule.after}")
        )
    return lines


def _scope(agent: AgentSuggestion, suggestion: Suggestion) -> list[str]:
    scope = suggestion.settings.scope
    if scope is None or agent.scope is None:
        return []
    share = f"{suggestion.settings.min_support:.0%}"
    if not agent.scope:
        return [
            f"# scope: no argument equals the subject in {share} of its calls "
            f"(subject found in {agent.runs_with_subject} of {agent.runs} runs)"
        ]
    lines = ["scope:", f"{_INDENT}subject:"]
    if scope.subject.attributes:
        attributes = ", ".join(name(a) for a in scope.subject.attributes)
        lines.append(f"{_INDENT * 2}attributes: [{attributes}]")
    if scope.subject.pattern is not None:
        lines.append(f"{_INDENT * 2}pattern: {json.dumps(scope.subject.pattern.pattern)}")
    lines.append(f"{_INDENT}arguments:" + _comment(f"subject found in {agent.runs_with_subject} runs"))
    tool = None
    for finding in agent.scope:
        if finding.tool != tool:
            tool = finding.tool
            lines.append(f"{_INDENT * 2}{name(tool)}:")
        lines.append(
            f"{_INDENT * 3}- {name(finding.argument)}"
            + _comment(f"equals the subject in {finding.matching} of {finding.carrying} calls")
        )
    return lines


def _repeats(agent: AgentSuggestion) -> list[str]:
    if not agent.repeats:
        return ["repeats:", f"{_INDENT}exempt: []" + _comment("no tool is routinely called again alike")]
    lines = ["repeats:", f"{_INDENT}exempt:"]
    for r in agent.repeats:
        lines.append(
            f"{_INDENT * 2}- {name(r.tool)}"
            + _comment(
                f"called again with the same arguments in {r.repeating} of {r.calling} successful runs "
                "calling it (polling)"
            )
        )
    return lines


def _agent(agent: AgentSuggestion, suggestion: Suggestion) -> list[str]:
    settings = suggestion.settings
    lines = [f"{name(agent.agent)}:" + _comment(f"{agent.runs} runs, {agent.successful} successful")]
    body: list[str] = ["budget:"]
    body += _block([_budget_line(b, settings.factor, settings.percentile) for b in agent.budgets], 1)
    body += _tools(agent)
    body += _order(agent, settings.min_runs)
    body += _scope(agent, suggestion)
    body += _repeats(agent)
    return lines + _block(body, 1)


def render_yaml(suggestion: Suggestion) -> str:
    """The policy file for ``suggestion``: the same text for the same runs and settings."""
    s = suggestion.settings
    lines = [
        f"# Suggested by `otel-traj policy suggest` from {suggestion.runs} runs. A run succeeded when it",
        "# ended with a final answer and no failed tool call. Budgets: ceil("
        f"{s.factor:g} x p{s.percentile}) of the successful runs;",
        f"# order rules held in every successful run calling the later tool ({s.min_runs} runs at least).",
        "# Review each rule before you enforce it.",
        "version: 1",
        "agents:",
    ]
    for agent in suggestion.agents:
        lines += _block(_agent(agent, suggestion), 1)
    return "\n".join(lines) + "\n"
