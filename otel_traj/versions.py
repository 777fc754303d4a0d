"""Versions: which agent, models, prompt, policy and tool contracts produced a verdict.

A regression is found by comparing versions, so every verdict says which ones it graded:

- ``agent``: the agent's own version attribute (``gen_ai.agent.version``), else the resource's
  ``service.version``;
- ``models``: the distinct models of the run's model calls, in order of first use;
- ``prompt``: ``<name>@<version>`` (or the one of them recorded) from the prompt attributes
  instrumentations write (``dialects.declarations.PROMPT_KEYS``);
- ``policy``: the policy's ``<version>@<content hash>``;
- ``tool_contracts``: a short hash of the agent's ``tools.contracts`` section, so a contract change
  shows even when the policy's version number was not bumped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from otel_traj.dialects.declarations import PROMPT_KEYS

if TYPE_CHECKING:
    from otel_traj.policy import AgentPolicy
    from otel_traj.trajectory import Trajectory

AGENT_VERSION_KEYS = ("gen_ai.agent.version",)
# Captured from any span of a run (see ``AssemblerConfig.capture_attributes``).
VERSION_ATTRIBUTES = (*AGENT_VERSION_KEYS, *(key for pair in PROMPT_KEYS for key in pair if key))
HASH_CHARS = 12


@dataclass(slots=True, frozen=True)
class Versions:
    agent: str | None = None
    models: tuple[str, ...] = ()
    prompt: str | None = None
    policy: str | None = None
    tool_contracts: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "models": list(self.models),
            "prompt": self.prompt,
            "policy": self.policy,
            "tool_contracts": self.tool_contracts,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Versions:
        """What ``to_dict`` wrote; missing keys are unknown (``None``, no models)."""
        return cls(
            agent=_text(data.get("agent")),
            models=tuple(m for m in (_text(m) for m in data.get("models") or ()) if m),
            prompt=_text(data.get("prompt")),
            policy=_text(data.get("policy")),
            tool_contracts=_text(data.get("tool_contracts")),
        )


def _text(value: object) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        return value or None
    return str(value) if isinstance(value, int | float) else None


def prompt_version(attributes: Mapping[str, Any]) -> str | None:
    for name_key, version_key in PROMPT_KEYS:
        name = _text(attributes.get(name_key)) if name_key else None
        version = _text(attributes.get(version_key))
        if name and version:
            return f"{name}@{version}"
        if name or version:
            return name or version
    return None


def agent_version(trajectory: Trajectory) -> str | None:
    attributes = trajectory.attributes
    found = (_text(attributes.get(key)) for key in AGENT_VERSION_KEYS)
    return next((v for v in found if v), None) or trajectory.service_version


def contracts_hash(policy: AgentPolicy) -> str | None:
    """A short hash of the agent's tool contracts; ``None`` when it has none."""
    if policy.tools is None or not policy.tools.contracts:
        return None
    section = {name: c.model_dump(mode="json", by_alias=True) for name, c in policy.tools.contracts.items()}
    canonical = json.dumps(section, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:HASH_CHARS]


def versions_of(
    trajectory: Trajectory, policy_version: str | None = None, tool_contracts: str | None = None
) -> Versions:
    models = dict.fromkeys(m.model for m in trajectory.model_calls if m.model)
    return Versions(
        agent=agent_version(trajectory),
        models=tuple(models),
        prompt=prompt_version(trajectory.attributes),
        policy=policy_version,
        tool_contracts=tool_contracts,
    )


def _distinct(values: Iterable[str | None]) -> str | None:
    found = dict.fromkeys(v for v in values if v)
    return ", ".join(found) or None


def merged_versions(
    parts: Iterable[Versions], policy: str | None = None, tool_contracts: str | None = None
) -> Versions:
    """The versions of several runs graded together (a conversation's traces): each distinct agent
    version and prompt in order of first appearance (``"1.4.0, 1.5.0"`` when a release happened
    mid-conversation), every model, and the ``policy`` and ``tool_contracts`` that graded them."""
    runs = list(parts)
    return Versions(
        agent=_distinct(v.agent for v in runs),
        models=tuple(dict.fromkeys(m for v in runs for m in v.models)),
        prompt=_distinct(v.prompt for v in runs),
        policy=policy,
        tool_contracts=tool_contracts,
    )
