"""Where a front door's verdicts go besides its own output, described once (:class:`Outputs`) and
built by one function (:func:`build_sinks`) for ``otel-traj serve`` and for ``otel-traj grade``
(``--store``, ``--langfuse``, ``--emit-otel``, ``--judge``): a sink added here works in both.

Each sink is imported when it is built, so a command that asks for none loads none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from otel_traj.judge.result import JudgeResult
    from otel_traj.judge.sink import JudgeSink
    from otel_traj.policy import Policy
    from otel_traj.redact import SensitiveKey
    from otel_traj.sinks.base import Sink
    from otel_traj.sinks.langfuse import LangfuseSink
    from otel_traj.sinks.otel_events import EvaluationEventSink
    from otel_traj.sinks.store import SqliteSink
    from otel_traj.sinks.store_postgres import PostgresSink

PolicySource = Callable[[], "Policy | None"]


class OutputError(ValueError):
    """An output that cannot be built: a missing key, no judges to run. ``output`` names it as the
    command line does (``langfuse``, ``emit-otel``, ``judge``); ``str()`` is the problem."""

    def __init__(self, output: str, problem: str) -> None:
        super().__init__(problem)
        self.output = output


@dataclass(slots=True, frozen=True, kw_only=True)
class Outputs:
    """The outputs asked for. ``store``: a SQLite file or a ``postgresql://`` URL, ``store_queue``
    verdicts waiting for its writer (None: ``OTEL_TRAJ_STORE_QUEUE``), ``store_retention`` seconds a
    PostgreSQL store keeps runs (None: ``OTEL_TRAJ_STORE_RETENTION``). ``langfuse``: scores on the
    traces and sessions, keys from the environment. ``emit_otel``: the base URL of an OTLP/HTTP receiver of
    ``gen_ai.evaluation.result`` events. ``judges``: the policy's LLM judges, publishing to every other
    sink; ``sample_judges`` False judges every run (offline), still within the hourly caps."""

    store: str | Path | None = None
    store_queue: int | None = None
    store_retention: float | None = None
    langfuse: bool = False
    emit_otel: str | None = None
    judges: bool = False
    sample_judges: bool = True


@dataclass(slots=True, frozen=True, kw_only=True)
class SinkSet:
    """The sinks built, in the order a pipeline holds them (the judges first, so that their results
    are out before the sinks they publish to flush), and each by its role for what reads it back."""

    sinks: list[Sink]
    store: SqliteSink | PostgresSink | None = None
    langfuse: LangfuseSink | None = None
    events: EvaluationEventSink | None = None
    judges: JudgeSink | None = None


def build_sinks(
    outputs: Outputs,
    *,
    policy: Policy | PolicySource | None,
    redact: SensitiveKey | None,
    before: Sequence[Sink] = (),
    after: Sequence[Sink] = (),
    on_judgement: Iterable[Callable[[JudgeResult], None]] = (),
) -> SinkSet:
    """The sinks of ``outputs``, between ``before`` and ``after`` (a front door's own sinks: serve's
    Prometheus first, an embedding's extra sinks last). ``policy``: the policy, or what returns the
    one in force (a service reloads it); ``redact``: what every sink masks (the policy's
    ``is_sensitive``). ``on_judgement``: callables receiving each judge result.

    Raises :class:`OutputError` for an output that cannot be configured and ``StoreError`` for a
    store that cannot be opened; what was already built is shut down first.
    """
    built: list[Sink] = []
    try:
        return _build(outputs, policy, redact, before, after, on_judgement, built)
    except BaseException:
        for sink in built:
            sink.shutdown(0)
        raise


def _build(
    outputs: Outputs,
    policy: Policy | PolicySource | None,
    redact: SensitiveKey | None,
    before: Sequence[Sink],
    after: Sequence[Sink],
    on_judgement: Iterable[Callable[[JudgeResult], None]],
    built: list[Sink],
) -> SinkSet:
    store: SqliteSink | PostgresSink | None = None
    langfuse = events = None
    if outputs.store:
        store = _store(outputs.store, outputs, redact)
        built.append(store)
    if outputs.langfuse:
        from otel_traj.sinks.langfuse import LangfuseSink

        try:
            langfuse = LangfuseSink(redact=redact)
        except ValueError as exc:
            raise OutputError("langfuse", str(exc)) from None
        built.append(langfuse)
    if outputs.emit_otel:
        from otel_traj.sinks.otel_events import EvaluationEventSink

        try:
            events = EvaluationEventSink(endpoint=outputs.emit_otel, redact=redact, policy=policy)
        except ValueError as exc:
            raise OutputError("emit-otel", str(exc)) from None
        built.append(events)
    sinks = [*before, *built, *after]
    judges = _judges(outputs, policy, redact, sinks, on_judgement) if outputs.judges else None
    return SinkSet(
        sinks=[judges, *sinks] if judges is not None else sinks,
        store=store,
        langfuse=langfuse,
        events=events,
        judges=judges,
    )


def _store(target: str | Path, outputs: Outputs, redact: SensitiveKey | None) -> SqliteSink | PostgresSink:
    """The store's sink; what is kept is masked as Langfuse is: the policy's keys and secret-looking
    ones."""
    from otel_traj.sinks.store_postgres_schema import is_postgres, require_driver, shown
    from otel_traj.sinks.store_schema import StoreError

    if isinstance(target, str) and is_postgres(target):
        require_driver(target)
        import psycopg

        from otel_traj.sinks.store_postgres import PostgresSink

        try:
            return PostgresSink(
                url=target, max_queue=outputs.store_queue, redact=redact, retention_s=outputs.store_retention
            )
        except psycopg.Error as exc:  # a URL libpq cannot take
            raise StoreError(f"{shown(target)}: {str(exc).strip()}") from None
    from otel_traj.sinks.store import SqliteSink

    return SqliteSink(path=target, max_queue=outputs.store_queue, redact=redact)


def _judges(
    outputs: Outputs,
    policy: Policy | PolicySource | None,
    redact: SensitiveKey | None,
    sinks: Sequence[Sink],
    on_judgement: Iterable[Callable[[JudgeResult], None]],
) -> JudgeSink:
    from otel_traj.judge.sink import JudgeSink

    current = policy() if callable(policy) else policy
    if current is None or not current.has_judges():
        raise OutputError("judge", "the policy has no judges")
    try:
        # The endpoint (OPENAI_BASE_URL, OPENAI_API_KEY) is read once, here.
        return JudgeSink(
            policy=policy if callable(policy) else current,
            sinks=sinks,
            on_result=on_judgement,
            sample=outputs.sample_judges,
            redact=redact,
        )
    except ValueError as exc:
        raise OutputError("judge", str(exc)) from None
