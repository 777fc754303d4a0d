"""The policy file's shape: pydantic models, strict (unknown keys are errors), compiled at load.

Regular expressions and JSON Schemas are compiled here, once per policy, so that grading never
compiles anything. Every section of an agent's policy is optional: a check runs only when its
section is configured, and ``agents.<name>`` overrides ``defaults`` key by key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import fastjsonschema
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
    create_model,
    model_validator,
)

from otel_traj.check_catalog import CATALOG, NAMES, Severity
from otel_traj.plugins import FunctionPath, registered_check
from otel_traj.policy.rules import Confirmation, Efficiency, Injection, Pattern, Postcondition, Relation


def _names(value: Any) -> Any:
    """Accept one name where a list of names is expected (``{list_invoices: customer_id}``)."""
    return (value,) if isinstance(value, str) else value


Names = Annotated[
    tuple[str, ...],
    BeforeValidator(_names),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}),
]


def _version(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class CompiledSchema:
    """A tool's argument JSON Schema and its validator, compiled by ``fastjsonschema`` at load."""

    __slots__ = ("source", "validate")

    def __init__(self, source: dict[str, Any]) -> None:
        self.source = source
        # Raises fastjsonschema.JsonSchemaValueException naming the failing path and rule; defaults
        # are not filled in because validation must never modify the trajectory it grades.
        self.validate: Callable[[Any], Any] = fastjsonschema.compile(source, use_default=False)

    def __reduce__(self) -> tuple[type[CompiledSchema], tuple[dict[str, Any]]]:
        # The compiled validator is generated code that cannot be pickled: a worker process
        # (``grade --jobs``) compiles the schema again.
        return CompiledSchema, (self.source,)


def _compile_schema(value: Any) -> Any:
    if isinstance(value, CompiledSchema):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"a JSON Schema must be a mapping, got {type(value).__name__}")
    try:
        return CompiledSchema(value)
    # fastjsonschema reports malformed keywords as definition errors, bad `pattern`s as re.error and
    # wrongly typed keyword values as AttributeError/TypeError from its code generator.
    except (fastjsonschema.JsonSchemaDefinitionException, re.error, AttributeError, TypeError) as exc:
        raise ValueError(f"invalid JSON Schema: {exc}") from None


JsonSchema = Annotated[
    CompiledSchema,
    BeforeValidator(_compile_schema),
    PlainSerializer(lambda s: s.source, return_type=dict[str, Any]),
    WithJsonSchema({"type": "object", "description": "JSON Schema of the tool's arguments"}),
]


class _Section(BaseModel):
    # defer_build: a model's validator is built when it first validates, not when its class is
    # defined; ``otel-traj policy check`` and ``import otel_traj.policy`` then build only what they use.
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        arbitrary_types_allowed=True,
        defer_build=True,
    )


class Budget(_Section):
    max_tool_calls: int | None = Field(default=None, ge=0)
    max_model_turns: int | None = Field(default=None, ge=0)
    max_total_tokens: int | None = Field(default=None, ge=0)
    max_input_tokens: int | None = Field(default=None, ge=0)
    max_output_tokens: int | None = Field(default=None, ge=0)
    max_duration_s: float | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(
        default=None, ge=0, description="US dollars, priced by genai-prices; not measurable when unknown"
    )


class Repeats(_Section):
    max_identical: int = Field(default=1, ge=1, description="identical calls (tool + arguments) allowed")
    retry_after_error: bool = Field(
        default=True, description="an identical call right after a failure is a retry"
    )
    max_retries: int = Field(default=2, ge=0, description="consecutive identical failing retries allowed")
    exempt: tuple[str, ...] = ()


# Words an answer uses when it tells the user a step failed; a run that ends on an unresolved tool
# error without them hides the failure.
DEFAULT_ACKNOWLEDGEMENT = (
    r"(?i)\b(error|fail\w*|unable|could ?n[o']t|can ?n[o']t|sorry|unavailable|problem|try again|issue)\b"
)


class Recovery(_Section):
    acknowledgement: Pattern = Field(
        default_factory=lambda: re.compile(DEFAULT_ACKNOWLEDGEMENT),
        description="pattern of a final answer that admits an unresolved tool error",
    )


class OrderRule(_Section):
    before: str = Field(description="tool that must have succeeded before the first call of `after`")
    after: str


class Subject(_Section):
    attributes: tuple[str, ...] = Field(default=(), description="first value found on any span of the trace")
    pattern: Pattern | None = Field(
        default=None,
        description="extract the subject from the attribute, the conversation id or the user's input",
    )
    from_first_use: bool = Field(
        default=True, description="the first value used for a scoped argument pins it"
    )


class Scope(_Section):
    subject: Subject = Field(default_factory=Subject)
    arguments: dict[str, Names] = Field(
        default_factory=dict, description="tool -> argument name(s) that must equal the subject"
    )


class ToolContract(_Section):
    side_effect: bool = False
    json_schema: JsonSchema | None = Field(default=None, alias="schema")
    grounded: tuple[str, ...] = Field(
        default=(),
        description="arguments whose value must appear in the user's input or an earlier tool result",
    )
    redact: tuple[str, ...] = Field(default=(), description="sensitive argument keys sinks must not publish")
    idempotency_key: str | None = Field(
        default=None, description="argument that must stay the same when a side-effecting call is retried"
    )
    postconditions: tuple[Postcondition, ...] = Field(
        default=(), description="what a successful call's result must say about the state it left"
    )
    relations: tuple[Relation, ...] = Field(
        default=(), description="arguments compared with values in earlier successful results"
    )


class Tools(_Section):
    allow: tuple[str, ...] = Field(default=(), description="empty = any tool allowed")
    deny: tuple[str, ...] = ()
    contracts: dict[str, ToolContract] = Field(default_factory=dict)


class ClaimRule(_Section):
    pattern: Pattern = Field(description="what the final answer claims")
    requires_success: str = Field(description="tool that must have succeeded for the claim to hold")


# The severity of each check's failures: one field per check of the catalog, with its default. The
# type checker sees a section without fields: read one with ``AgentPolicy.severity_of``.
if TYPE_CHECKING:

    class Severities(_Section):
        pass

else:
    Severities = create_model(
        "Severities",
        __base__=_Section,
        __module__=__name__,
        **{c.name: (Severity, c.severity) for c in CATALOG},
    )


class Grading(_Section):
    # A run whose checks take longer than this has the rest of its checks skipped, so one hostile
    # trajectory cannot hold the worker (and every run queued behind it).
    max_ms_per_run: float | None = Field(
        default=1000.0, gt=0, description="milliseconds of checks per run; null = no limit"
    )
    # A span with GenAI evidence that could not be read may hide a call: by default the run cannot pass.
    unreadable: Literal["unverified", "ignore"] = Field(
        default="unverified",
        description="a run with unreadable steps: unverified (its passing checks skipped) or ignore",
    )


class ConversationBudget(Budget):
    """Totals over every trace of one conversation."""

    max_traces: int | None = Field(default=None, ge=1)


class ConversationRepeats(_Section):
    max_identical: int = Field(
        default=1, ge=1, description="turns (traces) that may make the same call with the same arguments"
    )
    exempt: tuple[str, ...] = ()


class ConversationSeverities(_Section):
    scope: Severity = "critical"
    budget: Severity = "warning"
    repeats: Severity = "warning"


class Conversation(_Section):
    """Rules over every trace sharing a conversation id, graded once it is idle."""

    idle_s: float = Field(
        default=900.0, gt=0, description="seconds without a new trace after which the conversation is graded"
    )
    budget: ConversationBudget | None = None
    scope: bool = Field(default=False, description="the subject stays the same across the traces")
    repeats: ConversationRepeats | None = None
    severity: ConversationSeverities = Field(default_factory=ConversationSeverities)


# A check's name is a label of metrics and a Langfuse score name: short, and no built-in check's.
CHECK_NAME = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"


class CustomCheckRule(_Section):
    """A check of one's own: ``function(trajectory, config) -> CheckResult`` (see ``checks.custom``)."""

    name: str = Field(pattern=CHECK_NAME)
    function: FunctionPath = Field(
        description="'module:function'; left out, the entry point `name` of group otel_traj.checks"
    )
    severity: Severity = "error"
    config: dict[str, Any] = Field(default_factory=dict, description="passed to the function as it is")

    @model_validator(mode="before")
    @classmethod
    def _registered(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("function") is None and isinstance(data.get("name"), str):
            return {**data, "function": registered_check(data["name"])}
        return data

    @model_validator(mode="after")
    def _not_built_in(self) -> CustomCheckRule:
        if self.name in NAMES:
            raise ValueError(f"name {self.name!r} is a built-in check's")
        return self


class JudgeRule(_Section):
    """An LLM judge: run after the verdict on a sample of runs, never part of it."""

    name: str = Field(pattern=CHECK_NAME)
    rubric: str = Field(min_length=1, description="what the judge scores, in plain words")
    model: str = "gpt-4o-mini"
    sample: float = Field(default=0.1, ge=0, le=1, description="share of runs judged (by trace id)")
    max_calls_per_hour: int | None = Field(default=600, ge=1, description="null = no cap")
    severity: Severity = "info"
    labels: tuple[str, ...] = Field(default=("pass", "fail"), min_length=1, description="answers it may give")
    timeout_s: float = Field(default=30.0, gt=0, description="seconds per call")


class AgentPolicy(_Section):
    """The rules for one agent (``defaults`` or one ``agents.<name>`` entry, and their merge)."""

    budget: Budget | None = None
    repeats: Repeats | None = None
    recovery: Recovery | None = None
    order: tuple[OrderRule, ...] = ()
    scope: Scope | None = None
    tools: Tools | None = None
    claims: tuple[ClaimRule, ...] = ()
    confirmation: Confirmation | None = None
    injection: Injection | None = None
    efficiency: Efficiency | None = None
    custom: tuple[CustomCheckRule, ...] = ()
    judges: tuple[JudgeRule, ...] = ()
    severity: Severities = Field(default_factory=Severities)
    grading: Grading = Field(default_factory=Grading)
    conversation: Conversation | None = None

    def severity_of(self, check: str) -> Severity:
        """The severity of a built-in check's failures (``check_catalog``)."""
        return cast(Severity, getattr(self.severity, check))

    def contract(self, tool: str) -> ToolContract | None:
        return self.tools.contracts.get(tool) if self.tools is not None else None


# Argument keys that hold credentials or personal data wherever they appear.
DEFAULT_SENSITIVE_PATTERNS = (
    r"(?i)(secret|token|passw(or)?d|passphrase|api[_-]?key|authorization|credential|cookie|session[_-]?key)",
    r"(?i)(e[_-]?mail|phone|ssn|social[_-]?security)",
    r"(?i)(card[_-]?(number|no|num)|cc[_-]?num|^pan$|cvv|cvc|iban)",
)


class Redaction(_Section):
    keys: tuple[str, ...] = Field(default=(), description="argument keys redacted for every tool")
    patterns: tuple[Pattern, ...] = Field(
        default_factory=lambda: tuple(re.compile(p) for p in DEFAULT_SENSITIVE_PATTERNS),
        description="argument keys matching any of these are redacted",
    )


class PolicyFile(_Section):
    version: Annotated[str, BeforeValidator(_version), WithJsonSchema({"type": ["integer", "string"]})] = "1"
    defaults: AgentPolicy = Field(default_factory=AgentPolicy)
    agents: dict[str, AgentPolicy] = Field(default_factory=dict)
    redact: Redaction = Field(default_factory=Redaction)
