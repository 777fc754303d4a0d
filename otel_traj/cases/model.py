"""Golden cases: the case file format and its loader.

A case file is JSONL, one case per line, in the widely used golden-case shape::

    {"case_id": "...", "input": "...", "expected_tools": [{"name": "...", "args": {...}}],
     "order": "strict" | "any", "expect_error_from": ["..."], "answer_must_contain": "..." | null}

Files in that shape are accepted as they are. Optional keys of ours refine the comparison:
``match`` (strict|unordered|subset|superset), ``args_mode`` (exact|ignore|subset|superset),
``tool_args`` (per-tool override: a mode, or the list of argument keys, or dotted paths into nested
values such as ``time.start``, that must match, or ``{"function": "module:function"}``, a matcher
``(expected_args, actual_args) -> bool`` imported when the file loads),
``nonempty`` (free-text arguments that only need a non-empty value: ``reason`` for every expected
call whose ``args`` list it, or ``tool.reason``) and ``match_on`` (the trajectory
attribute whose value names this case). Unknown keys are errors, so a typo never silently loosens a case.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from otel_traj.plugins import FunctionPath

MatchMode = Literal["strict", "unordered", "subset", "superset"]
ArgsMode = Literal["exact", "ignore", "subset", "superset"]
Order = Literal["strict", "any"]


class CaseFileError(ValueError):
    """A case file that cannot be used. The message names the file, the line and the field."""

    def __init__(self, source: str, line: int, field: str | None, message: str) -> None:
        self.source = source
        self.line = line
        self.field = field
        where = f"{source}:{line}"
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")


class ArgMatcher(BaseModel):
    """A function of one's own deciding whether a call's arguments match the expected ones."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    function: FunctionPath


def _matcher(value: Any) -> Any:
    # A mapping can only be a matcher: its own error (a function that cannot be imported) says more
    # than the union's complaint that it is not one of the modes.
    if isinstance(value, Mapping):
        try:
            return ArgMatcher.model_validate(value)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"{where}: {first['msg'].removeprefix('Value error, ')}") from None
    return value


ArgsRule = Annotated[ArgsMode | tuple[str, ...] | ArgMatcher, BeforeValidator(_matcher)]


class ExpectedTool(BaseModel):
    """One expected tool call. ``nonempty`` names arguments that only need a non-empty value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    nonempty: tuple[str, ...] = ()


class GoldenCase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    case_id: str = Field(min_length=1)
    input: str
    expected_tools: tuple[ExpectedTool, ...]
    order: Order = "any"
    expect_error_from: tuple[str, ...] = ()
    answer_must_contain: str | None = None
    match: MatchMode | None = None
    args_mode: ArgsMode = "exact"
    tool_args: dict[str, ArgsRule] = Field(default_factory=dict)
    nonempty: tuple[str, ...] = ()
    match_on: str | None = None

    @model_validator(mode="after")
    def _names_refer_to_expected_tools(self) -> GoldenCase:
        # An override for a tool the case never expects is almost always a misspelt name.
        names = {tool.name for tool in self.expected_tools}
        unknown = sorted(set(self.tool_args) - names)
        if unknown:
            raise ValueError(f"tool_args names tools not in expected_tools: {', '.join(unknown)}")
        for tool, rule in self.tool_args.items():
            bad = [key for key in rule if not all(key.split("."))] if isinstance(rule, tuple) else []
            if bad:
                raise ValueError(f"tool_args.{tool}: {bad[0]!r} is not an argument key or dotted path")
        declared = {key for tool in self.expected_tools for key in tool.args}
        for entry in self.nonempty:
            tool, dot, _ = entry.partition(".")
            if dot and tool not in names:
                raise ValueError(f"nonempty entry {entry!r} names a tool not in expected_tools")
            if not dot and entry not in declared:
                raise ValueError(
                    f"nonempty entry {entry!r} is in no expected tool's args (use 'tool.{entry}')"
                )
        return self

    @property
    def match_mode(self) -> MatchMode:
        """The trajectory-match mode: ``match`` if given, else ``strict`` for ``order: strict``,
        ``unordered`` for ``order: any``."""
        if self.match is not None:
            return self.match
        return "strict" if self.order == "strict" else "unordered"

    @property
    def expected_names(self) -> frozenset[str]:
        return frozenset(tool.name for tool in self.expected_tools)

    @property
    def tolerated_names(self) -> frozenset[str]:
        """Tools the case expects to fail but does not list as expected calls: calls to them are
        neither missing nor extra."""
        return frozenset(self.expect_error_from) - self.expected_names

    def args_rule(self, tool: str) -> ArgsRule:
        """The argument rule for one tool: its ``tool_args`` override, else ``args_mode``."""
        return self.tool_args.get(tool, self.args_mode)

    def nonempty_for(self, tool: ExpectedTool) -> frozenset[str]:
        """Free-text arguments of one expected tool: its own ``nonempty``, case entries ``tool.arg``
        for it, and bare case entries that its ``args`` list (their value there is only an example)."""
        keys = set(tool.nonempty)
        for entry in self.nonempty:
            name, dot, key = entry.partition(".")
            if dot and name == tool.name:
                keys.add(key)
            elif not dot and entry in tool.args:
                keys.add(entry)
        return frozenset(keys)


def _field_path(loc: tuple[int | str, ...]) -> str:
    # Unions add the failing member's type to the location ("literal[...]", "tuple[str, ...]"): the
    # user wrote a field, not a type, so those parts are dropped.
    return ".".join(str(part) for part in loc if "[" not in str(part)) or "(case)"


def parse_cases(lines: Iterable[str], source: str = "<cases>") -> list[GoldenCase]:
    """Parse JSONL case lines. Blank lines are skipped; ``case_id`` must be unique in the file."""
    cases: list[GoldenCase] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CaseFileError(
                source, number, None, f"invalid JSON: {exc.msg} (column {exc.colno})"
            ) from exc
        if not isinstance(data, dict):
            raise CaseFileError(source, number, None, f"expected a JSON object, got {type(data).__name__}")
        try:
            case = GoldenCase.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            value = first.get("input")
            shown = "" if first["type"] == "missing" else f" (got {json.dumps(value, default=str)[:80]})"
            raise CaseFileError(source, number, _field_path(first["loc"]), first["msg"] + shown) from exc
        if case.case_id in seen:
            raise CaseFileError(
                source,
                number,
                "case_id",
                f"duplicate case_id {case.case_id!r} (first on line {seen[case.case_id]})",
            )
        seen[case.case_id] = number
        cases.append(case)
    return cases


def load_cases(path: str | Path) -> list[GoldenCase]:
    """Load a JSONL case file; raises ``CaseFileError`` naming the file, line and field on bad input."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseFileError(str(path), 0, None, f"cannot read: {exc}") from exc
    return parse_cases(text.splitlines(), source=str(path))
