"""docs/api.md follows the public signatures: the processor's arguments, the sinks, the sink hooks."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from otel_traj import TrajectoryProcessor
from otel_traj.judge.sink import JudgeSink
from otel_traj.sinks.base import Sink
from otel_traj.sinks.langfuse import LangfuseSink
from otel_traj.sinks.otel_events import EvaluationEventSink
from otel_traj.sinks.prometheus import PrometheusSink
from otel_traj.sinks.store import SqliteSink

API = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()


def _section(title: str) -> str:
    return API.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_processor_signature_and_its_table_are_the_code() -> None:
    parameters = inspect.signature(TrajectoryProcessor).parameters.values()
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)
    written = ", ".join(f"{p.name}={p.default!r}" for p in parameters)
    documented = " ".join(_section("TrajectoryProcessor").split())
    assert f"TrajectoryProcessor(*, {written})" in documented
    table = re.findall(r"^\| `(\w+)` \|", _section("TrajectoryProcessor"), re.MULTILINE)
    assert table == [p.name for p in parameters]


def test_every_public_sink_is_listed_with_its_import() -> None:
    sinks = _section("Sinks")
    for sink in (PrometheusSink, LangfuseSink, SqliteSink, EvaluationEventSink, JudgeSink):
        assert issubclass(sink, Sink)
        assert f"from {sink.__module__} import {sink.__name__}" in sinks, sink.__name__


def test_every_sink_hook_is_documented() -> None:
    hooks = [name for name, _ in inspect.getmembers(Sink, inspect.isfunction) if not name.startswith("_")]
    assert hooks
    for hook in hooks:
        assert f"`{hook}(" in _section("Sinks"), hook
