"""Verdict -> Langfuse scores in wire form (pure: no I/O), and the report of their delivery.

A score is the JSON object ``POST /api/public/scores`` takes (``traceId``, ``dataType``, ...), built
as a plain dict: the ``langfuse`` package's generated models would cost ~0.3 s to import and ~0.3 ms
per score to serialize, on a thread that shares the GIL with the agent. The tests validate every body
against those very models (``CreateScoreRequest``, strictly), so a field the API does not know fails
there. Ids are derived from (trace id, observation id, score name) and the timestamp is the
trajectory's end: Langfuse overwrites a score re-sent with the same id, name and timestamp date, so
retries and re-grades update instead of duplicating.

Skipped checks (for example an argument check when content capture is off) send no BOOLEAN score: 0
would read as a failure and 1 as a pass. They are listed in the ``traj.outcome`` score's metadata.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from otel_traj.cost import run_cost
from otel_traj.redact import Redactor, TraceRedaction
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.judge.result import JudgeResult

SCORE_PREFIX = "traj."
# Fixed namespace: the same (trace, observation, name) gives the same id in every process and release.
SCORE_ID_NAMESPACE = uuid.UUID("6f1d7c2e-5b0a-4c8e-9d3f-2a7e1b4c8d90")
# Langfuse stores long comments, but a score comment is read in a table cell.
MAX_COMMENT_CHARS = 1000
DataType = Literal["BOOLEAN", "NUMERIC", "CATEGORICAL"]
_SPAN_HEX = re.compile(r"^[0-9a-f]{16}$")
_ENVIRONMENT = re.compile(r"^(?!langfuse)[a-z0-9_-]{1,40}$")


WireScore = dict[str, Any]
"""One score as the JSON object the API receives (``traceId``, ``dataType``, ...)."""


def wire_timestamp(when: dt.datetime) -> str:
    """ISO 8601 as the API's own clients write it: UTC ends in ``Z``."""
    return when.isoformat().replace("+00:00", "Z")


def validate_environment(environment: str | None) -> str | None:
    """Langfuse accepts lowercase alphanumerics, '-' and '_', at most 40 chars, not 'langfuse*'."""
    if environment is None or environment == "":
        return None
    if not _ENVIRONMENT.match(environment):
        raise ValueError(
            f"environment={environment!r}: Langfuse environments are lowercase letters, digits, '-' "
            "and '_' (at most 40 characters) and must not start with 'langfuse'"
        )
    return environment


def score_id(trace_id: str, observation_id: str | None, name: str) -> str:
    return str(uuid.uuid5(SCORE_ID_NAMESPACE, f"{trace_id}/{observation_id or ''}/{name}"))


def observation_of(step_id: str) -> str | None:
    """The span a step's score attaches to: the tool span itself, or for a call the model requested
    but no span shows (``<model span>:<n>``) the model call that requested it."""
    span = step_id.partition(":")[0]
    return span if _SPAN_HEX.match(span) else None


def score_timestamp(verdict: Verdict) -> dt.datetime:
    """The trajectory's end: stable across retries and re-grades, unlike the grading time."""
    traj = verdict.trajectory
    ns = traj.end_ns or traj.start_ns or verdict.graded_at_ns
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC)


def clean_comment(text: str | None, redaction: TraceRedaction) -> str | None:
    """Redacted first, then folded to one line and cut: a value cut or folded first would no longer
    match the secret it is."""
    if not text:
        return None
    cleaned = " ".join(redaction.text(text).split())
    return cleaned if len(cleaned) <= MAX_COMMENT_CHARS else cleaned[: MAX_COMMENT_CHARS - 1] + "…"


def _outcome_comment(verdict: Verdict) -> str:
    failed = verdict.failed_checks
    if not failed:
        return f"{verdict.outcome}: all {len(verdict.checks)} checks passed"
    names = ", ".join(c.name for c in failed)
    return f"{verdict.outcome}: {len(failed)} of {len(verdict.checks)} checks failed ({names})"


def verdict_scores(verdict: Verdict, redactor: Redactor, environment: str | None = None) -> list[WireScore]:
    """The scores one verdict publishes: one BOOLEAN per check that ran, the NUMERIC score and the
    CATEGORICAL outcome on the trace, and each failing check again on every offending observation."""
    traj = verdict.trajectory
    trace_id = traj.trace_hex
    timestamp = wire_timestamp(score_timestamp(verdict))
    redaction = redactor.scope(traj)
    base_metadata: dict[str, Any] = {
        "policy_version": verdict.policy_version,
        "agent": traj.agent_label,
        "service_version": traj.service_version,
        "versions": verdict.versions.to_dict(),
        "total_cost_usd": run_cost(traj).total_usd,
    }

    def make(
        name: str,
        value: float | str,
        data_type: DataType,
        comment: str | None,
        observation_id: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> WireScore:
        metadata = dict(base_metadata)
        if extra:
            metadata.update(extra)
        score: WireScore = {
            "id": score_id(trace_id, observation_id, name),
            "traceId": trace_id,
            "name": name,
            "value": value,
            "dataType": data_type,
            "metadata": metadata,
            "timestamp": timestamp,
        }
        optional = {
            "observationId": observation_id,
            "comment": clean_comment(comment, redaction),
            "environment": environment,
        }
        # Absent rather than null: older servers reject explicit nulls on some fields.
        score.update((k, v) for k, v in optional.items() if v is not None)
        return score

    scores: list[WireScore] = []
    for check in verdict.checks:
        if check.status == "skipped":
            continue
        name = SCORE_PREFIX + check.name
        extra = {"severity": check.severity}
        value = 0.0 if check.failed else 1.0
        scores.append(make(name, value, "BOOLEAN", check.reason, extra=extra))
        if check.failed:
            for observation in dict.fromkeys(filter(None, map(observation_of, check.steps))):
                scores.append(make(name, value, "BOOLEAN", check.reason, observation, extra))
    scores.append(make(SCORE_PREFIX + "score", float(verdict.score), "NUMERIC", None))
    skipped = [c.name for c in verdict.checks if c.status == "skipped"]
    outcome_extra: dict[str, Any] = {"complete": traj.complete}
    if skipped:
        outcome_extra["skipped_checks"] = skipped
    scores.append(
        make(
            SCORE_PREFIX + "outcome",
            verdict.outcome,
            "CATEGORICAL",
            _outcome_comment(verdict),
            extra=outcome_extra,
        )
    )
    return scores


JUDGE_PREFIX = "judge."


def judge_score(result: JudgeResult, redactor: Redactor, environment: str | None = None) -> WireScore:
    """An LLM judge's result as one NUMERIC score on the trace, ``judge.<name>``: apart from the
    ``traj.*`` scores of the checks, marked ``source: judge`` in its metadata, the label there too."""
    name = JUDGE_PREFIX + result.judge
    score: WireScore = {
        "id": score_id(result.trace_hex, None, name),
        "traceId": result.trace_hex,
        "name": name,
        "value": result.score,
        "dataType": "NUMERIC",
        # The judge saw redacted evidence only; its words are cleaned like every comment all the same.
        "comment": clean_comment(result.explanation, TraceRedaction(redactor.sensitive, (), ())),
        "metadata": {
            "source": result.source,
            "label": result.label,
            "model": result.model,
            "severity": result.severity,
            "agent": result.agent,
            "policy_version": result.policy_version,
        },
        "timestamp": wire_timestamp(dt.datetime.fromtimestamp(result.end_ns / 1e9, tz=dt.UTC)),
    }
    if environment is not None:
        score["environment"] = environment
    return score


@dataclass(slots=True, frozen=True)
class DeliveryReport:
    """What happened to the scores handed to a sink (cumulative, or the difference of two reports)."""

    delivered: int = 0
    rejected: int = 0
    dropped: int = 0
    pending: int = 0
    errors: tuple[str, ...] = ()
    form: Literal["scores", "single", "ingestion"] | None = None

    @property
    def ok(self) -> bool:
        return self.rejected == 0 and self.dropped == 0 and self.pending == 0

    def summary(self) -> str:
        text = (
            f"{self.delivered} scores delivered, {self.rejected} rejected, {self.dropped} dropped, "
            f"{self.pending} pending"
        )
        return text + "".join(f"\n  {e}" for e in self.errors)

    def since(self, earlier: DeliveryReport) -> DeliveryReport:
        return DeliveryReport(
            delivered=self.delivered - earlier.delivered,
            rejected=self.rejected - earlier.rejected,
            dropped=self.dropped - earlier.dropped,
            pending=self.pending,
            errors=tuple(e for e in self.errors if e not in earlier.errors),
            form=self.form,
        )
