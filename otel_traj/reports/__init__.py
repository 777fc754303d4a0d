"""Reports of verdicts: ``table`` (terminal), ``markdown`` (PR comment), ``junit`` (CI), ``json``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from otel_traj.reports.json import render_json
from otel_traj.reports.junit import render_junit
from otel_traj.reports.markdown import render_markdown
from otel_traj.reports.table import render_table
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict


class Renderer(Protocol):
    """A report of trajectory verdicts and, when given, conversation verdicts."""

    def __call__(
        self, verdicts: Sequence[Verdict], conversations: Sequence[ConversationVerdict] | None = None
    ) -> str: ...


RENDERERS: dict[str, Renderer] = {
    "table": render_table,
    "json": render_json,
    "markdown": render_markdown,
    "junit": render_junit,
}


def render(
    fmt: str, verdicts: Sequence[Verdict], conversations: Sequence[ConversationVerdict] | None = None
) -> str:
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown report format {fmt!r}; choose from {', '.join(RENDERERS)}") from None
    return renderer(verdicts, conversations)


__all__ = ["RENDERERS", "render", "render_json", "render_junit", "render_markdown", "render_table"]
