"""Observed runs for ``policy suggest``: trajectories rebuilt from trace files, or read back from the
verdicts in the store (each holds its trajectory as ``otel_traj.serialize`` wrote it).

A stored verdict is validated field by field, so a damaged row is named with the field and the
problem instead of turning into a wrong suggestion. Keys a verdict of an older version lacks take
the defaults a trajectory has.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from otel_traj.cost import CallCost, RunCost
from otel_traj.steps import ModelCall, RequestedTool, ToolCall
from otel_traj.trajectory import Tokens, Trajectory


class TrafficError(ValueError):
    """Runs that cannot be read: ``str()`` names the file (and the trace and field) and the problem."""


class _Stored(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _StoredToolCall(_Stored):
    step_id: str
    name: str
    kind: Literal["tool", "output"] = "tool"
    call_id: str | None = None
    arguments: dict[str, Any] | str | None = None
    arguments_source: Literal["execution", "request"] = "execution"
    turn: int | None = None
    result: str | None = None
    ok: bool = True
    error: str | None = None
    error_type: str | None = None
    observed: bool = True
    parallel: bool = False
    start_ns: int = 0
    end_ns: int = 0

    def call(self) -> ToolCall:
        return ToolCall(
            name=self.name,
            span_id=int(self.step_id.partition(":")[0], 16),
            step_id=self.step_id,
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            call_id=self.call_id,
            arguments=self.arguments if isinstance(self.arguments, dict) else None,
            arguments_text=self.arguments if isinstance(self.arguments, str) else None,
            result=self.result,
            ok=self.ok,
            error_type=self.error_type,
            error_message=self.error,
            observed=self.observed,
            parallel=self.parallel,
            turn=self.turn,
            arguments_source=self.arguments_source,
            output=self.kind == "output",
        )


class _StoredModelCall(_Stored):
    step_id: str
    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reasons: tuple[str, ...] = ()
    requested_tools: tuple[str, ...] = ()
    start_ns: int = 0
    end_ns: int = 0
    cost_usd: float | None = None
    cost_reason: str | None = None

    def call(self) -> ModelCall:
        return ModelCall(
            span_id=int(self.step_id, 16),
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            model=self.model,
            provider=self.provider,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            finish_reasons=self.finish_reasons,
            requested_tools=tuple(RequestedTool(name=n) for n in self.requested_tools),
        )


class _StoredRun(_Stored):
    trace_id: str = Field(pattern=r"^[0-9a-f]{1,32}$")
    agent: str
    service_name: str | None = None
    service_version: str | None = None
    conversation_id: str | None = None
    tool_calls: list[_StoredToolCall] = []
    model_calls: list[_StoredModelCall] = []
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    start_ns: int = 0
    end_ns: int = 0
    user_input: str | None = None
    final_answer: str | None = None
    attributes: dict[str, Any] = {}
    errors: list[str | None] = []
    complete: bool = True
    total_cost_usd: float | None = None
    cost_reason: str | None = None
    tool_definitions: dict[str, dict[str, Any]] = {}

    def _cost(self) -> RunCost | None:
        """The cost the verdict recorded (prices change: it is not priced again); ``None`` for a
        verdict written before costs were, so that it is priced now."""
        if "total_cost_usd" not in self.model_fields_set:
            return None
        calls = tuple(CallCost(m.cost_usd, m.cost_reason) for m in self.model_calls)
        return RunCost(calls, self.total_cost_usd, self.cost_reason)

    def trajectory(self) -> Trajectory:
        calls = [c.call() for c in self.tool_calls]
        return Trajectory(
            trace_id=int(self.trace_id, 16),
            # The stored agent is the run's label: its agent name, else its service name.
            agent=self.agent,
            service_name=self.service_name,
            service_version=self.service_version,
            conversation_id=self.conversation_id,
            tool_calls=[c for c in calls if not c.output],
            output_calls=[c for c in calls if c.output],
            model_calls=[m.call() for m in self.model_calls],
            tokens=Tokens(
                self.input_tokens,
                self.output_tokens,
                self.cache_read_tokens,
                self.cache_write_tokens,
                self.reasoning_tokens,
            ),
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            user_input=self.user_input,
            final_answer=self.final_answer,
            attributes=dict(self.attributes),
            tool_definitions=dict(self.tool_definitions),
            complete=self.complete,
            errors=[e for e in self.errors if e is not None],
            cost=self._cost(),
        )


def trajectory_from_stored(data: Any, source: str = "<store>") -> Trajectory:
    """The trajectory of one stored verdict (``verdict_to_dict``'s shape)."""
    try:
        return _StoredRun.model_validate(data).trajectory()
    except ValidationError as exc:
        trace = data.get("trace_id") if isinstance(data, dict) else None
        where = f"{source}: trace {trace}" if isinstance(trace, str) else source
        err = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in err["loc"]) or "verdict"
        raise TrafficError(f"{where}: {field}: {err['msg']}") from None


def runs_from_store(
    path: str | Path, since_ns: int | None = None, agent: str | None = None
) -> list[Trajectory]:
    """The runs whose verdicts the store at ``path`` (a SQLite file or a ``postgresql://`` URL)
    holds, oldest first."""
    from otel_traj.sinks.store_reader import open_store, read_errors, store_name
    from otel_traj.sinks.store_schema import Query, StoreError

    try:
        store = open_store(path)
    except StoreError as exc:
        raise TrafficError(str(exc)) from None
    except read_errors() as exc:
        raise TrafficError(f"{store_name(path)}: {exc}") from None
    try:
        verdicts = store.verdicts(Query(since_ns=since_ns, agent=agent))
    except read_errors(ValueError) as exc:
        raise TrafficError(f"{store.name}: {exc}") from None
    finally:
        store.close()
    return [trajectory_from_stored(v, store.name) for v in verdicts]


def runs_from_files(
    paths: Sequence[str | Path], capture: Iterable[str] = (), jobs: int | None = 1
) -> list[Trajectory]:
    """The runs the trace files at ``paths`` (files or directories) hold; ``capture``: span
    attributes to keep on each run, from any span of its trace (a subject attribute, say); ``jobs``:
    worker processes reading them (``read_runs``)."""
    from otel_traj.adapters import TraceFileError
    from otel_traj.offline import read_runs

    try:
        return read_runs(paths, capture=capture, jobs=jobs).trajectories
    except TraceFileError as exc:
        raise TrafficError(str(exc)) from None


def select(
    runs: Iterable[Trajectory], since_ns: int | None = None, agent: str | None = None
) -> list[Trajectory]:
    """``runs`` started at ``since_ns`` or later, of ``agent`` (its agent name, else service name),
    each trace once (the first read: trace files before the store)."""
    chosen: dict[int, Trajectory] = {}
    for r in runs:
        if (since_ns is None or r.start_ns >= since_ns) and (agent is None or r.agent_label == agent):
            chosen.setdefault(r.trace_id, r)
    return list(chosen.values())
