"""Policy rules on tool results and on the conversation around an action, compiled at load.

Postconditions and relations select values from tool results with JMESPath (the ``jmespath``
package). A relation's path may name the call's own arguments as ``'{name}'``; the placeholder is
rewritten at load into a call of the ``argument`` function, so the expression is compiled once and
grading only evaluates it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import jmespath
from jmespath import exceptions as jmespath_errors
from jmespath.parser import ParsedResult
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
    model_validator,
)

# ``'{invoice_id}'``: the value of the call's argument ``invoice_id``.
PLACEHOLDER = re.compile(r"'\{([A-Za-z_][\w.-]*)\}'")


class CompiledPath:
    """A JMESPath expression as written in the policy, and its compiled form."""

    __slots__ = ("arguments", "expression", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        # Argument names the expression reads, in order of first use.
        self.arguments: tuple[str, ...] = tuple(dict.fromkeys(PLACEHOLDER.findall(source)))
        rewritten = PLACEHOLDER.sub(lambda m: f"argument('{m.group(1)}')", source)
        self.expression: ParsedResult = jmespath.compile(rewritten)
        if _zero_step(self.expression.parsed):
            # jmespath accepts ``[::0]`` and raises ValueError on every list at evaluation.
            raise ValueError("slice step cannot be 0")

    def render(self, arguments: dict[str, Any]) -> str:
        """The expression with each placeholder replaced by the call's value, for a reason."""
        return PLACEHOLDER.sub(lambda m: f"'{arguments.get(m.group(1))}'", self.source)


def _zero_step(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    children = node.get("children", [])
    if node.get("type") == "slice":
        return len(children) == 3 and children[2] == 0
    return any(_zero_step(child) for child in children)


def _compile_path(value: Any) -> Any:
    if isinstance(value, CompiledPath) or not isinstance(value, str):
        return value
    try:
        return CompiledPath(value)
    except jmespath_errors.ParseError as exc:
        where = f"{exc.msg} at position {exc.lex_position}"
        raise ValueError(f"invalid JMESPath expression {value!r}: {where}") from None
    except (jmespath_errors.JMESPathError, ValueError) as exc:
        raise ValueError(f"invalid JMESPath expression {value!r}: {' '.join(str(exc).split())}") from None


JmesPath = Annotated[
    CompiledPath,
    BeforeValidator(_compile_path),
    PlainSerializer(lambda p: p.source, return_type=str),
    WithJsonSchema({"type": "string", "description": "JMESPath expression"}),
]


def _compile_regex(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
    return value


Pattern = Annotated[
    re.Pattern[str],
    BeforeValidator(_compile_regex),
    PlainSerializer(lambda p: p.pattern, return_type=str),
    WithJsonSchema({"type": "string", "format": "regex"}),
]


class _Rule(BaseModel):
    # The same configuration as the policy's sections (strict, frozen, built on first use).
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, arbitrary_types_allowed=True, defer_build=True
    )


class Postcondition(_Rule):
    path: JmesPath = Field(description="JMESPath into the tool's result")
    in_: tuple[Any, ...] | None = Field(default=None, alias="in", description="allowed values")
    equals_argument: str | None = Field(default=None, description="argument of the call the value must equal")

    @model_validator(mode="after")
    def _one_rule(self) -> Postcondition:
        if self.in_ is not None and self.equals_argument is not None:
            raise ValueError("give one of `in` and `equals_argument`, not both")
        return self


Operator = Literal["<", "<=", "==", "!=", ">=", ">"]


class Relation(_Rule):
    argument: str = Field(description="argument of the call compared")
    op: Operator
    earlier: str = Field(description="tool whose earlier successful result holds the value")
    path: JmesPath = Field(description="JMESPath into that result; '{name}' is the call's argument `name`")


DEFAULT_CONFIRMATION = r"(?i)\b(yes|yep|confirm(ed)?|go ahead|proceed|approved?)\b"


class Confirmation(_Rule):
    tools: tuple[str, ...] = Field(default=(), description="high-risk tools that need a confirmation")
    user_pattern: Pattern = Field(
        default_factory=lambda: re.compile(DEFAULT_CONFIRMATION),
        description="a user message that confirms, after the agent's last question",
    )
    approval_tools: tuple[str, ...] = Field(
        default=(), description="tools whose successful call before the action approves it"
    )


# Text that addresses the agent rather than describing data: instructions planted in a result.
DEFAULT_INJECTION_PATTERNS = (
    r"(?i)\bignore (all |any |the |your )?(previous|prior|above|earlier|preceding) "
    r"(instructions|prompts?|messages|rules)",
    r"(?i)\bdisregard (all |any |the |your )?(previous|prior|above|earlier|system) "
    r"(instructions|prompts?|rules|guidelines)",
    r"(?i)\bforget (all |any |the |your )?(previous |prior )?(instructions|rules)\b",
    r"(?i)\b(new|updated|override) (system )?instructions?\s*:",
    r"(?i)</?\s*(system|instructions?)\s*>",
)


class Injection(_Rule):
    patterns: tuple[Pattern, ...] = Field(
        default_factory=lambda: tuple(re.compile(p) for p in DEFAULT_INJECTION_PATTERNS),
        description="instruction-like text in a tool result",
    )
    sensitive_tools: tuple[str, ...] = Field(
        default=(),
        description="tools that must not follow such a result, beside denied and side-effecting ones",
    )


class Efficiency(_Rule):
    max_wasted_turns: int = Field(default=0, ge=0, description="wasted model turns allowed per run")
