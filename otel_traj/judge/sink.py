"""JudgeSink: the policy's LLM judges, on their own bounded worker, after the verdict.

``export`` runs on the grading worker and only decides which judges see the run (each judge's
``sample``, by trace id, and its ``max_calls_per_hour``) and queues them; it never waits on a model.
The judge thread (``otel-traj-judge``) builds the evidence, asks the model, validates the answer and
hands the ``JudgeResult`` to the sinks it publishes to (their ``on_judgement``) and to ``on_result``
callbacks. The verdict is already out by then and nothing a judge says changes it.

Every call is counted in ``stats.judge_calls`` by (judge, result): ``ok``, ``timeout``, ``error``
(the endpoint failed), ``invalid`` (the reply is not a valid answer), ``capped`` (over the hourly
cap), ``queue_full`` and ``shutdown`` (queued but not judged when the sink shut down).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from otel_traj import env
from otel_traj.delivery import Delivery
from otel_traj.judge.answer import InvalidAnswer, parse_answer
from otel_traj.judge.client import ChatModel, JudgeTimeout, OpenAIChatModel
from otel_traj.judge.evidence import judge_evidence, judge_messages
from otel_traj.judge.limits import HourlyCap, sampled
from otel_traj.judge.result import JudgeResult
from otel_traj.redact import Redactor, SensitiveKey, default_sensitive_key
from otel_traj.sinks.base import Sink
from otel_traj.sinks.evaluation_records import evaluated_span
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.policy import AgentPolicy, JudgeRule, Policy

logger = logging.getLogger("otel_traj.judge")

Job = tuple[Verdict, "JudgeRule", "AgentPolicy"]
ResultCallback = Callable[[JudgeResult], None]
PolicySource = Callable[[], "Policy | None"]


def with_judges(policy: Policy, sinks: Iterable[Sink]) -> list[Sink]:
    """``sinks``, preceded by a ``JudgeSink`` publishing to them when the policy has judges: first,
    so that its results are out before they flush and shut down (its ``export`` only queues)."""
    outputs = list(sinks)
    return [JudgeSink(policy=policy, sinks=outputs), *outputs] if policy.has_judges() else outputs


class JudgeSink(Sink):
    """Runs ``policy``'s judges on a sample of the verdicts it is given.

    Args:
        policy: where the judges are configured (``judges`` in ``defaults`` and per agent), or what
            returns the policy in force (a service's, which reloads it): each run is judged by the
            judges of the policy in force when it was graded; None judges nothing.
        sinks: where each ``JudgeResult`` goes (``on_judgement``: Langfuse, the store, Prometheus,
            evaluation events); list this sink before them in a pipeline, so that it has published
            its results when they flush and shut down.
        on_result: callables receiving each result on the judge thread.
        model: the chat endpoint; by default the official ``openai`` client on ``OPENAI_BASE_URL``
            with ``OPENAI_API_KEY``.
        max_queue: runs waiting for a judge; beyond it new ones are dropped and counted
            (``OTEL_TRAJ_JUDGE_QUEUE``, default 1000).
        sample: False judges every run (``grade --judge``), still within the hourly caps.
        redact: what the evidence masks (default: the ``is_sensitive`` of the policy in force).
        clock: monotonic seconds for the hourly caps.
    """

    def __init__(
        self,
        *,
        policy: Policy | PolicySource,
        sinks: Iterable[Sink] = (),
        on_result: Iterable[ResultCallback] = (),
        model: ChatModel | None = None,
        max_queue: int | None = None,
        sample: bool = True,
        redact: SensitiveKey | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._policy = policy
        self.outputs = list(sinks)
        self._callbacks = list(on_result)
        self.max_queue = env.COUNT.require(
            "max_queue", max_queue if max_queue is not None else env.JUDGE_QUEUE.read()
        )
        self._sample = sample
        self._clock = clock
        self._model = model if model is not None else OpenAIChatModel()
        self._redactor = Redactor(redact if redact is not None else self._is_sensitive)
        self._caps: dict[tuple[str, int | None], HourlyCap] = {}
        self._delivery: Delivery[Job] = Delivery(
            name="judge",
            deliver=self._deliver,
            stats=self.stats,
            max_queue=self.max_queue,
            batch_size=1,
            when_full="drop_newest",
            on_drop=self._refused,
            on_stop=self._model.close,
        )

    @property
    def policy(self) -> Policy | None:
        """The policy in force."""
        return self._policy() if callable(self._policy) else self._policy

    def _is_sensitive(self, tool: str, key: str) -> bool:
        policy = self.policy
        return policy.is_sensitive(tool, key) if policy is not None else default_sensitive_key(tool, key)

    # -- the grading worker's side: choose and queue ------------------------------------------------

    def export(self, verdict: Verdict) -> None:
        policy = self.policy
        if policy is None:
            return
        trajectory = verdict.trajectory
        agent_policy = policy.resolve(trajectory)
        for rule in agent_policy.judges:
            if self._sample and not sampled(trajectory.trace_id, rule.name, rule.sample):
                continue
            # A run the queue refuses (counted by ``_refused``) takes nothing from the hourly cap.
            if not self._delivery.accepts() or self._cap(rule).take():
                self._delivery.put((verdict, rule, agent_policy))
            else:
                self.stats.count_judge_call(rule.name, "capped")

    def _refused(self, jobs: Sequence[Job], reason: str) -> None:
        for _, rule, _ in jobs:
            self.stats.count_judge_call(rule.name, "queue_full" if reason == "queue_full" else "shutdown")

    def _cap(self, rule: JudgeRule) -> HourlyCap:
        key = (rule.name, rule.max_calls_per_hour)
        cap = self._caps.get(key)
        if cap is None:
            cap = self._caps[key] = HourlyCap(rule.max_calls_per_hour, self._clock)
        return cap

    # -- the judge thread -------------------------------------------------------------------------

    def _deliver(self, jobs: list[Job]) -> None:
        for job in jobs:
            try:
                self._judge(*job)
            except Exception:
                self.stats.count_internal_error()
                logger.exception("judging trace %s failed", job[0].trajectory.trace_hex)

    def _judge(self, verdict: Verdict, rule: JudgeRule, agent_policy: AgentPolicy) -> None:
        trajectory = verdict.trajectory
        evidence = judge_evidence(trajectory, agent_policy, self._redactor.scope(trajectory))
        try:
            reply = self._model.complete(rule.model, judge_messages(rule, evidence), rule.timeout_s)
        except JudgeTimeout:
            self.stats.count_judge_call(rule.name, "timeout")
            return
        except Exception as exc:  # the endpoint's failures, whatever the client raises
            self.stats.count_judge_call(rule.name, "error")
            logger.warning("judge %s failed on trace %s: %s", rule.name, trajectory.trace_hex, exc)
            return
        try:
            answer = parse_answer(reply, rule.labels)
        except InvalidAnswer as exc:
            self.stats.count_judge_call(rule.name, "invalid")
            logger.info(
                "judge %s gave an invalid answer for trace %s: %s", rule.name, trajectory.trace_hex, exc
            )
            return
        self.stats.count_judge_call(rule.name, "ok")
        result = JudgeResult(
            trace_id=trajectory.trace_id,
            agent=trajectory.agent_label,
            judge=rule.name,
            model=rule.model,
            score=answer.score,
            label=answer.label,
            explanation=answer.explanation,
            severity=rule.severity,
            end_ns=trajectory.end_ns or trajectory.start_ns or verdict.graded_at_ns,
            judged_at_ns=time.time_ns(),
            policy_version=verdict.policy_version,
            span_id=evaluated_span(trajectory),
        )
        self._publish(result)

    def _publish(self, result: JudgeResult) -> None:
        for sink in self.outputs:
            try:
                sink.on_judgement(result)
            except Exception:
                self.stats.count_sink_error(type(sink).__name__)
                logger.exception("sink %s failed on a judge result", type(sink).__name__)
        for callback in self._callbacks:
            try:
                callback(result)
            except Exception:
                self.stats.count_internal_error()
                logger.exception("judge result callback failed")

    # -- lifecycle ----------------------------------------------------------------------------------

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until every run queued so far is judged and published; False if the time ran out."""
        return self._delivery.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        """Judge what is queued within ``timeout_millis``; what is left then is counted (``shutdown``)
        and the thread is left to end with its call in flight (bounded by the judge's ``timeout_s``)."""
        self._delivery.shutdown(timeout_millis)


__all__ = ["JudgeSink", "with_judges"]
