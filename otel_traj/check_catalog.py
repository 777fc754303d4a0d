"""The checks, each declared once: the one place the rest of otel-traj learns what checks there are.

Each entry is a check's name (the key of its policy section's severity, and the name its results
carry), its default severity, the link of the failure chain it judges (``otel_traj.stages``), when it
runs and when it fails (the policy reference's table, ``docs/policy.md``), and two facts about what it
reads: the argument keys the grader computes once for the checks that compare them, and tool calls
only (a run whose agent spans could not be read leaves such a check standing); and whether its
failures are data-scope violations (each offending step counted per tool in
``otel_traj_scope_violations_total``, the metric that pages). The policy's
``Severities``, the failure stages, the Prometheus label set and the docs table derive from it; the
grader binds each entry to its check function (``otel_traj.checks.BINDERS``).

Pure data, no import of a check or of the policy: the policy models are built from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from otel_traj.stages import Stage

Severity = Literal["critical", "error", "warning", "info"]


@dataclass(frozen=True, slots=True)
class CheckInfo:
    name: str
    severity: Severity
    stage: Stage | None
    runs_when: str
    fails_when: str
    keyed: bool = False
    tools_only: bool = False
    scope_violation: bool = False


# In the order the grader runs them (custom checks come after).
CATALOG: tuple[CheckInfo, ...] = (
    CheckInfo(
        "order",
        "error",
        "tool_selection",
        "`order` has rules",
        "the first `after` call has no successful `before` call that ended before it started",
        tools_only=True,
    ),
    CheckInfo(
        "scope",
        "critical",
        "parameters",
        "`scope.arguments` is not empty",
        "a scoped argument differs from the subject",
        tools_only=True,
        scope_violation=True,
    ),
    CheckInfo(
        "repeats",
        "warning",
        None,
        "`repeats` is set",
        "the same tool with the same (normalized) arguments runs more than `max_identical` times"
        " (retries and `exempt` tools excluded)",
        keyed=True,
        tools_only=True,
    ),
    CheckInfo(
        "recovery",
        "error",
        "recovery",
        "`repeats` or `recovery` is set",
        "more than `max_retries` consecutive identical failing calls; or the run ends right after a"
        " failed tool call and the answer does not match `acknowledgement`",
        keyed=True,
    ),
    CheckInfo(
        "side_effects",
        "critical",
        "terminal_state",
        "a contract has `side_effect: true`",
        "a write succeeded twice with the same arguments; or it was retried with only its"
        " idempotency key changed",
        keyed=True,
        tools_only=True,
    ),
    CheckInfo(
        "arguments",
        "error",
        "parameters",
        "a contract has a `schema`",
        "arguments break the schema (the reason names the argument and the rule), or were recorded"
        " as text that is not JSON",
        tools_only=True,
    ),
    CheckInfo(
        "grounded",
        "error",
        "parameters",
        "a contract lists `grounded` arguments",
        "a value is in neither the user's input, an earlier tool result, nor what an earlier retrieval"
        " or memory search returned",
    ),
    CheckInfo(
        "tools",
        "critical",
        "tool_selection",
        "`tools.allow` or `tools.deny` is set",
        "a tool outside `allow` or in `deny` was called (or a memory write in `deny` made, "
        "`memory:<operation>`)",
        tools_only=True,
    ),
    CheckInfo(
        "postconditions",
        "error",
        "terminal_state",
        "a contract has `postconditions`",
        "a successful call's result breaks one (the reason names the path, the value and the rule)",
        tools_only=True,
    ),
    CheckInfo(
        "relations",
        "error",
        "parameters",
        "a contract has `relations`",
        "the argument does not stand in `op` to the value the latest earlier successful `earlier`"
        " result gives, or no earlier result gives one (`no earlier list_invoices result gives"
        " amount_yuan for INV-9999`)",
        tools_only=True,
    ),
    CheckInfo(
        "budget",
        "warning",
        None,
        "`budget` is set",
        "a measure exceeds its limit (the reason shows value/limit)",
    ),
    CheckInfo(
        "claims",
        "critical",
        "statement",
        "`claims` has rules",
        "the answer matches `pattern` but `requires_success` never succeeded",
    ),
    CheckInfo(
        "confirmation",
        "critical",
        "tool_selection",
        "`confirmation.tools` is not empty",
        "a listed tool was called (or memory write made, `memory:<operation>`) with no user message"
        " matching `user_pattern` after the agent's last question and no successful `approval_tools`"
        " call before it",
    ),
    CheckInfo(
        "efficiency",
        "warning",
        None,
        "`efficiency` is set",
        "more than `max_wasted_turns` wasted turns: a turn of read-only calls whose argument values"
        " appear neither in the previous turn's results nor in a user message new since (both could"
        " have been one parallel turn), or a turn with neither a tool call nor text; the reason gives"
        " the seconds of model time that could have been saved",
    ),
    CheckInfo(
        "injection",
        "critical",
        "tool_selection",
        "`injection` is set",
        "a tool result (or error), retrieved document or memory record matches a pattern and a later"
        " call or memory write is to a denied tool, a side-effecting tool, a `sensitive_tools` tool,"
        " or a tool the user's messages never asked for; the reason quotes the masked excerpt and"
        " both steps",
    ),
)
NAMES: tuple[str, ...] = tuple(c.name for c in CATALOG)
SCOPE_VIOLATIONS = frozenset(c.name for c in CATALOG if c.scope_violation)
KEYED = frozenset(c.name for c in CATALOG if c.keyed)
TOOLS_ONLY = frozenset(c.name for c in CATALOG if c.tools_only)


def docs_rows() -> list[str]:
    """The checks table of ``docs/policy.md`` (``tests/test_docs.py`` keeps the two equal)."""
    rows = ["| check | runs when | fails when | default severity |", "|---|---|---|---|"]
    rows += [f"| `{c.name}` | {c.runs_when} | {c.fails_when} | {c.severity} |" for c in CATALOG]
    return rows
