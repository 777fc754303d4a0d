"""Kind vocabularies: attribute keys whose value says what a span is, and the values each one defines.

A value its vocabulary defines is strong evidence: a step kind, or :data:`NOT_A_STEP` (a chain, an
embedding: known, and no tool, model or agent step); a retriever is a context read (:func:`reads`). A
value it does not define (a kind a newer instrumentation added, a wrong type) is no evidence at all: it
never hides what the span's other keys say. ``otel_traj.dialects.recognize`` settles what several
pieces of evidence say.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from otel_traj.spanview import SpanView
from otel_traj.steps import StepKind

NOT_A_STEP: Literal["none"] = "none"
Meaning = StepKind | Literal["none"]
# A value whose meaning depends on the span (a LangSmith ``chain`` is the agent only at the run's root).
Refine = Callable[[SpanView, Mapping[str, Any]], Meaning | None]


@dataclass(frozen=True, slots=True)
class Vocabulary:
    key: str
    dialect: str
    values: Mapping[str, Meaning | Refine]
    # A key the vendor's SDK writes from this vocabulary's own value (LangSmith sets
    # ``gen_ai.operation.name`` from the run type): on a span this vocabulary decided, it says nothing
    # more, and a value of it that means otherwise is no contradiction.
    echoes: str | None = None

    def meaning(self, view: SpanView, attrs: Mapping[str, Any]) -> Meaning | None:
        """What the span's value of ``key`` says it is; None when it says nothing (absent, unknown)."""
        value = attrs.get(self.key)
        if type(value) is not str:
            return None
        found = self.values.get(value)
        if found is None or isinstance(found, str):
            return found
        return found(view, attrs)

    def defined(self) -> list[tuple[str, str]]:
        """``(value, meaning)`` of every defined value, for the docs (a refined value: ``depends``)."""
        return [
            (value, meaning if isinstance(meaning, str) else "depends")
            for value, meaning in self.values.items()
        ]


def not_steps(values: Iterable[str]) -> dict[str, Meaning | Refine]:
    """Values a vocabulary defines for spans that are no step."""
    return dict.fromkeys(values, NOT_A_STEP)


def reads(*keys: str) -> Refine:
    """A retriever kind: a context read when the span records one of ``keys`` (what it returned or
    what it asked for), else no step (a read that records neither gives a check nothing)."""

    def meaning(view: SpanView, attrs: Mapping[str, Any]) -> Meaning:
        return "context" if any(key in attrs for key in keys) else NOT_A_STEP

    return meaning
