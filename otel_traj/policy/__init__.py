"""Policies: what a trajectory must and must not do, per agent, loaded from YAML or JSON."""

from otel_traj.policy.loader import Policy, PolicyError, load_policy, parse_policy
from otel_traj.policy.models import (
    AgentPolicy,
    Budget,
    ClaimRule,
    Conversation,
    ConversationBudget,
    ConversationRepeats,
    OrderRule,
    PolicyFile,
    Recovery,
    Redaction,
    Repeats,
    Scope,
    Severities,
    Subject,
    ToolContract,
    Tools,
)

__all__ = [
    "AgentPolicy",
    "Budget",
    "ClaimRule",
    "Conversation",
    "ConversationBudget",
    "ConversationRepeats",
    "OrderRule",
    "Policy",
    "PolicyError",
    "PolicyFile",
    "Recovery",
    "Redaction",
    "Repeats",
    "Scope",
    "Severities",
    "Subject",
    "ToolContract",
    "Tools",
    "load_policy",
    "parse_policy",
]
