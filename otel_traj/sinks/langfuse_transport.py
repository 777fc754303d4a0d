"""Deliver score requests to a Langfuse server in the form it understands, and report each score's fate.

Three wire forms, newest first:

- ``scores``: ``POST /api/public/scores`` with a JSON list (servers v4.59+, the typed client's
  ``scores.create``) -> 202, or 207 ``{accepted, rejected, errors}``;
- ``single``: the same path with one object per request (older v4 and v3 servers) -> 200 ``{id}``;
- ``ingestion``: ``POST /api/public/ingestion`` with ``score-create`` events (v3) -> 207
  ``{successes, errors}``.

In ``auto`` mode the first form the server accepts is remembered. One send attempt never retries: the
sink owns backoff, so it can honour the shutdown deadline and count what it gives up on.

Requests go through the typed client's own HTTP wrapper (base URL, Basic auth, SDK headers) with
bodies already in wire form (``langfuse_scores.to_wire``) and responses parsed with the package's
response models; ``scores.create`` itself would re-serialize every score through the generated
encoder at ~0.3 ms each.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import pydantic
from langfuse.api import LangfuseAPI
from langfuse.api.core.request_options import RequestOptions
from langfuse.api.scores.types.create_score_batch_results import CreateScoreBatchResults

from otel_traj.sinks.langfuse_scores import WireScore

ApiMode = Literal["auto", "scores", "single", "ingestion"]
WireForm = Literal["scores", "single", "ingestion"]
API_MODES: tuple[ApiMode, ...] = ("auto", "scores", "single", "ingestion")
_NEXT_FORM: dict[WireForm, WireForm | None] = {"scores": "single", "single": "ingestion", "ingestion": None}
_MAX_MESSAGE_CHARS = 300


def is_transient(status: int) -> bool:
    """Worth retrying: throttled, timed out, or the server's fault."""
    return status in (408, 425, 429) or status >= 500


def retry_after_seconds(headers: httpx.Headers | dict[str, str] | None) -> float | None:
    """``Retry-After`` in seconds (delta or HTTP date), or ``retry-after-ms``."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    if (ms := lowered.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            return None
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def server_message(status: int | None, body: Any) -> str:
    """One line naming what the server said, for logs and delivery reports."""
    text = (body.get("message") or body.get("error") or body) if isinstance(body, dict) else body
    message = str(text).replace("\n", " ").strip()[:_MAX_MESSAGE_CHARS]
    return f"HTTP {status}: {message}" if status is not None else message


@dataclass(slots=True)
class SendResult:
    """The fate of one attempt: scores the server took, scores worth retrying, and permanent rejections
    (one message per rejected score)."""

    delivered: int = 0
    retry: list[WireScore] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    retry_after: float | None = None
    transient_error: str | None = None


class _Unsupported(Exception):
    """The server does not implement this wire form (404/405, or a list refused before any success)."""


class _IngestionItem(pydantic.BaseModel):
    id: str
    status: int
    message: str | None = None
    error: Any = None


class _IngestionResponse(pydantic.BaseModel):
    successes: list[_IngestionItem]
    errors: list[_IngestionItem]


def _error_id(error: Any) -> str | None:
    extra = getattr(error, "model_extra", None) or {}
    value = extra.get("id") or extra.get("scoreId")
    return str(value) if value is not None else None


def _error_status(error: Any) -> int | None:
    extra = getattr(error, "model_extra", None) or {}
    status = extra.get("status") or extra.get("statusCode")
    return int(status) if isinstance(status, int | str) and str(status).isdigit() else None


class ScoreTransport:
    def __init__(self, api: LangfuseAPI, mode: ApiMode = "auto") -> None:
        if mode not in API_MODES:
            raise ValueError(f"api_mode={mode!r}: expected one of {', '.join(API_MODES)}")
        self.api = api
        self.mode = mode
        self._form: WireForm = "scores" if mode == "auto" else mode
        self._confirmed = mode != "auto"

    @property
    def form(self) -> WireForm:
        """The wire form in use (after detection in ``auto`` mode)."""
        return self._form

    @property
    def detected(self) -> bool:
        return self._confirmed

    def _options(self) -> RequestOptions:
        # The client's own timeout applies; its built-in retries would hide failures from the sink.
        return {"max_retries": 0}

    def send(self, scores: Sequence[WireScore]) -> SendResult:
        form = self._form
        while True:
            try:
                result = self._send(form, scores)
            except _Unsupported as exc:
                fallback = _NEXT_FORM[form] if not self._confirmed else None
                if fallback is None:
                    return SendResult(rejected=[str(exc)] * len(scores))
                form = fallback
                continue
            # Remember a form only once the server accepted something in it: a 400 for invalid scores
            # must not switch a current server to the single-object form.
            if result.delivered and not self._confirmed:
                self._form, self._confirmed = form, True
            return result

    def _send(self, form: WireForm, scores: Sequence[WireScore]) -> SendResult:
        try:
            if form == "scores":
                return self._send_list(scores)
            if form == "single":
                return self._send_single(scores)
            return self._send_ingestion(scores)
        except httpx.TransportError as exc:
            return SendResult(retry=list(scores), transient_error=f"{type(exc).__name__}: {exc}")

    def _failure(
        self, status: int, body: Any, headers: Any, scores: Sequence[WireScore], list_form: bool
    ) -> SendResult:
        message = server_message(status, body)
        if status in (404, 405) or (list_form and status == 400 and not self._confirmed):
            raise _Unsupported(message)
        if is_transient(status):
            return SendResult(
                retry=list(scores), retry_after=retry_after_seconds(headers), transient_error=message
            )
        return SendResult(rejected=[message] * len(scores))

    def _send_list(self, scores: Sequence[WireScore]) -> SendResult:
        response = self._post("api/public/scores", list(scores))
        body = self._body(response)
        if response.status_code == 207:
            try:
                results = CreateScoreBatchResults.model_validate(body)
            except pydantic.ValidationError:
                return SendResult(rejected=[server_message(207, body)] * len(scores))
            return self._partial(results, scores)
        if 200 <= response.status_code < 300:
            return SendResult(delivered=len(scores))
        return self._failure(response.status_code, body, response.headers, scores, list_form=True)

    def _partial(self, response: CreateScoreBatchResults, scores: Sequence[WireScore]) -> SendResult:
        """207: retry only the scores an error names with a transient status; errors that name no score
        cannot be retried safely and count as permanent rejections."""
        by_id = {s["id"]: s for s in scores}
        result = SendResult(delivered=response.accepted)
        unnamed: list[str] = []
        for error in response.errors:
            ident, status = _error_id(error), _error_status(error)
            message = server_message(status, error.message)
            if ident in by_id and status is not None and is_transient(status):
                result.retry.append(by_id.pop(ident))
                result.transient_error = message
            elif ident in by_id:
                by_id.pop(ident)
                result.rejected.append(message)
            else:
                unnamed.append(message)
        missing = response.rejected - len(result.retry) - len(result.rejected)
        for i in range(max(0, missing)):
            result.rejected.append(unnamed[i] if i < len(unnamed) else "rejected without a message")
        return result

    def _post(self, path: str, body: Any) -> httpx.Response:
        # The typed client has no method for these older forms; its wrapped httpx client still gives
        # the configured base URL, Basic auth and SDK headers.
        return self.api._client_wrapper.httpx_client.request(
            path,
            method="POST",
            content=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            request_options=self._options(),
        )

    @staticmethod
    def _body(response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            return response.text

    def _send_single(self, scores: Sequence[WireScore]) -> SendResult:
        result = SendResult()
        for i, score in enumerate(scores):
            try:
                response = self._post("api/public/scores", score)
            except httpx.TransportError as exc:
                result.retry.extend(scores[i:])
                result.transient_error = f"{type(exc).__name__}: {exc}"
                return result
            if 200 <= response.status_code < 300:
                result.delivered += 1
                continue
            status, body = response.status_code, self._body(response)
            if status in (404, 405) and result.delivered == 0:
                raise _Unsupported(server_message(status, body))
            if is_transient(status):
                result.retry.extend(scores[i:])
                result.retry_after = retry_after_seconds(response.headers)
                result.transient_error = server_message(status, body)
                return result
            result.rejected.append(server_message(status, body))
        return result

    def _send_ingestion(self, scores: Sequence[WireScore]) -> SendResult:
        events: dict[str, WireScore] = {}
        batch = []
        for score in scores:
            body = dict(score)
            # v3 takes the score's time from the event envelope; ScoreBody has no timestamp.
            timestamp = body.pop("timestamp", None) or dt.datetime.now(dt.UTC).isoformat()
            # A fresh envelope id per attempt; the score's own id stays stable so the server overwrites.
            event_id = str(uuid.uuid4())
            events[event_id] = score
            batch.append({"id": event_id, "timestamp": timestamp, "type": "score-create", "body": body})
        response = self._post("api/public/ingestion", {"batch": batch})
        body_json = self._body(response)
        if not 200 <= response.status_code < 300:
            return self._failure(response.status_code, body_json, response.headers, scores, list_form=False)
        try:
            parsed = _IngestionResponse.model_validate(body_json)
        except pydantic.ValidationError:
            return SendResult(rejected=[server_message(response.status_code, body_json)] * len(scores))
        result = SendResult(delivered=len(parsed.successes))
        for error in parsed.errors:
            failed = events.get(error.id)
            message = server_message(error.status, error.message or error.error)
            if failed is not None and is_transient(error.status):
                result.retry.append(failed)
                result.transient_error = message
            else:
                result.rejected.append(message)
        return result
