"""Loading a policy file, resolving it per agent, and the errors that point at the broken field."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from otel_traj.policy.models import AgentPolicy, PolicyFile

if TYPE_CHECKING:
    from otel_traj.trajectory import Trajectory


class PolicyError(ValueError):
    """An unreadable or invalid policy. Each line names the file, the dotted field path and the problem."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(
            "\n".join(f"{source}: {path}: {msg}" if path else f"{source}: {msg}" for path, msg in problems)
        )


def _dotted(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _problems(exc: ValidationError, prefix: tuple[int | str, ...] = ()) -> list[tuple[str, str]]:
    problems = []
    for err in exc.errors(include_url=False):
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] != "missing" and isinstance(err.get("input"), str | int | float | bool | None):
            shown = repr(err["input"])
            if shown not in msg:
                msg = f"{msg} (got {shown})"
        problems.append((_dotted(prefix + tuple(err["loc"])), msg))
    return problems


def _merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Override key by key; mappings merge recursively, lists and scalars replace."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


# Redaction answers a policy remembers; past this many (keys are data: unbounded in number) it starts
# over.
_MAX_SENSITIVE_ANSWERS = 65_536


class Policy:
    """A validated policy: ``defaults`` plus per-agent overrides, each resolved and compiled at load.

    ``policy_version`` (``<version>@<content hash>``) goes into every verdict so a score can be traced
    to the exact rules that produced it; the hash covers the parsed content, not comments or layout.
    """

    def __init__(
        self, document: PolicyFile, source: str = "<policy>", content_hash: str | None = None
    ) -> None:
        self.document = document
        self.source = source
        canonical = json.dumps(document.model_dump(mode="json", by_alias=True), sort_keys=True)
        self.content_hash = content_hash or hashlib.sha256(canonical.encode()).hexdigest()[:12]
        self.defaults = document.defaults
        self._sensitive: dict[tuple[str, str, str | None], bool] = {}
        self.agents: dict[str, AgentPolicy] = {}
        base = document.defaults.model_dump(by_alias=True, exclude_unset=True)
        for name, override in document.agents.items():
            merged = _merge(base, override.model_dump(by_alias=True, exclude_unset=True))
            try:
                self.agents[name] = AgentPolicy.model_validate(merged)
            except ValidationError as exc:
                raise PolicyError(source, _problems(exc, ("agents", name))) from None

    @property
    def version(self) -> str:
        return self.document.version

    @property
    def policy_version(self) -> str:
        return f"{self.document.version}@{self.content_hash}"

    def for_agent(self, name: str | None) -> AgentPolicy:
        return self.agents.get(name, self.defaults) if name is not None else self.defaults

    def resolve(self, trajectory: Trajectory) -> AgentPolicy:
        """``agents.<name>`` matched against the agent name, else the service name, else ``defaults``."""
        for name in (trajectory.agent, trajectory.service_name):
            if name is not None and name in self.agents:
                return self.agents[name]
        return self.defaults

    def has_judges(self) -> bool:
        """True when ``defaults`` or an agent configures LLM judges (``judges``)."""
        return bool(self.defaults.judges) or any(agent.judges for agent in self.agents.values())

    def sensitive_keys(self, tool: str, agent: str | None = None) -> frozenset[str]:
        """Argument keys configured as sensitive for ``tool`` (contract ``redact`` and ``redact.keys``)."""
        contract = self.for_agent(agent).contract(tool)
        declared = contract.redact if contract is not None else ()
        return frozenset(self.document.redact.keys) | frozenset(declared)

    def is_sensitive(self, tool: str, key: str, agent: str | None = None) -> bool:
        """True when sinks must redact argument ``key`` of ``tool``: configured, or a secret-like name.

        Asked for every key of every argument, result and reason a sink writes: the answers are
        remembered (a bounded number of them; the policy never changes)."""
        question = (tool, key, agent)
        answer = self._sensitive.get(question)
        if answer is None:
            answer = key in self.sensitive_keys(tool, agent) or any(
                p.search(key) for p in self.document.redact.patterns
            )
            if len(self._sensitive) >= _MAX_SENSITIVE_ANSWERS:
                self._sensitive.clear()
            self._sensitive[question] = answer
        return answer


def parse_policy(data: Any, source: str = "<policy>") -> Policy:
    """Validate an already parsed document (the content of a YAML or JSON file)."""
    if not isinstance(data, Mapping):
        raise PolicyError(source, [("", f"a policy must be a mapping, got {type(data).__name__}")])
    try:
        document = PolicyFile.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(source, _problems(exc)) from None
    return Policy(document, source)


# libyaml's parser when PyYAML was built with it (its wheels are): a tenth of the pure-Python one's time.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_policy(path: str | Path) -> Policy:
    """Read a YAML (or JSON) policy file; raises :class:`PolicyError` on any problem."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(source, [("", f"cannot read: {exc}")]) from None
    return parse_policy_text(text, source, as_json=source.endswith(".json"))


def parse_policy_text(text: str, source: str = "<policy>", as_json: bool = False) -> Policy:
    """Validate a policy given as YAML (or, ``as_json``, JSON) text; :class:`PolicyError` names
    ``source`` with each problem."""
    try:
        data = json.loads(text) if as_json else yaml.load(text, Loader=_YAML_LOADER)
    except json.JSONDecodeError as exc:
        raise PolicyError(source, [("", f"invalid JSON at line {exc.lineno}: {exc.msg}")]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise PolicyError(source, [("", f"invalid YAML{where}: {problem}")]) from None
    return parse_policy(data, source)
