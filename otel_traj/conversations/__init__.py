"""Conversations: every trace sharing a conversation id, held as summaries of graded traces and graded
together (budget over the turns, one subject, no call repeated turn after turn)."""

from otel_traj.conversations.grade import conversation_verdicts, grade_conversation
from otel_traj.conversations.summary import CallSummary, TraceSummary, summarize
from otel_traj.conversations.tracker import Conversations
from otel_traj.conversations.verdict import ConversationVerdict

__all__ = [
    "CallSummary",
    "ConversationVerdict",
    "Conversations",
    "TraceSummary",
    "conversation_verdicts",
    "grade_conversation",
    "summarize",
]
