"""Deliver scores to a Langfuse server in the form it understands, and report each score's fate.

Three wire forms, newest first:

- ``scores``: ``POST /api/public/scores`` with a JSON list (servers v4.59+) -> 202, or 207
  ``{accepted, rejected, errors}``;
- ``single``: the same path with one object per request (older v4 and v3 servers) -> 200 ``{id}``;
- ``ingestion``: ``POST /api/public/ingestion`` with ``score-create`` events (v3) -> 207
  ``{successes, errors}``.

In ``auto`` mode the first form the server accepts is remembered. One send attempt never retries: the
sink owns backoff, so it can honour the shutdown deadline and count what it gives up on.

Plain ``httpx`` with Basic auth, not the ``langfuse`` package: its client is private API for the older
forms, and importing it costs ~0.3 s. Every request runs with OpenTelemetry instrumentation suppressed,
as the SDK's own exporters do, so a host application that instruments httpx does not trace the sink's
deliveries (nor, through an OTel-exporting Langfuse setup, loop them back as spans to grade).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import orjson
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value

from otel_traj.sinks.langfuse_scores import WireScore

ApiMode = Literal["auto", "scores", "single", "ingestion"]
WireForm = Literal["scores", "single", "ingestion"]
API_MODES: tuple[ApiMode, ...] = ("auto", "scores", "single", "ingestion")
_NEXT_FORM: dict[WireForm, WireForm | None] = {"scores": "single", "single": "ingestion", "ingestion": None}
_MAX_MESSAGE_CHARS = 300
_JSON = {"Content-Type": "application/json"}


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


def _batch_results(body: Any) -> tuple[int, list[dict[str, Any]]] | None:
    """``(rejected, errors)`` of a 207 list response, None if the body is not of that shape."""
    if not isinstance(body, dict):
        return None
    rejected, errors = body.get("rejected"), body.get("errors")
    if not isinstance(rejected, int) or not isinstance(errors, list):
        return None
    if not all(isinstance(e, dict) and isinstance(e.get("message"), str) for e in errors):
        return None
    return rejected, errors


def _ingestion_items(body: Any, key: str) -> list[dict[str, Any]] | None:
    items = body.get(key) if isinstance(body, dict) else None
    if not isinstance(items, list):
        return None
    if not all(isinstance(i, dict) and isinstance(i.get("status"), int) for i in items):
        return None
    return items


def _error_id(error: dict[str, Any]) -> str | None:
    value = error.get("id") or error.get("scoreId")
    return str(value) if value is not None else None


def _error_status(error: dict[str, Any]) -> int | None:
    status = error.get("status") or error.get("statusCode")
    return int(status) if isinstance(status, int | str) and str(status).isdigit() else None


class ScoreTransport:
    """One HTTP client to one Langfuse project. ``send`` is called from one thread at a time."""

    def __init__(
        self,
        base_url: str,
        public_key: str,
        secret_key: str,
        *,
        mode: ApiMode = "auto",
        timeout: float = 10.0,
    ) -> None:
        if mode not in API_MODES:
            raise ValueError(f"api_mode={mode!r}: expected one of {', '.join(API_MODES)}")
        self.mode = mode
        self.timeout = timeout
        self._form: WireForm = "scores" if mode == "auto" else mode
        self._confirmed = mode != "auto"
        self._client = httpx.Client(
            base_url=base_url.rstrip("/") + "/",
            auth=httpx.BasicAuth(public_key, secret_key),
            headers={
                "User-Agent": "otel-traj",
                "X-Langfuse-Sdk-Name": "otel-traj",
                "X-Langfuse-Public-Key": public_key,
            },
            timeout=timeout,
        )

    @property
    def form(self) -> WireForm:
        """The wire form in use (after detection in ``auto`` mode)."""
        return self._form

    @property
    def detected(self) -> bool:
        return self._confirmed

    def close(self) -> None:
        self._client.close()

    def send(self, scores: Sequence[WireScore], timeout: float | None = None) -> SendResult:
        """One attempt; ``timeout`` (seconds) bounds each network wait instead of the client's own."""
        form = self._form
        limit = self.timeout if timeout is None else min(self.timeout, timeout)
        while True:
            try:
                result = self._send(form, scores, limit)
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

    def _send(self, form: WireForm, scores: Sequence[WireScore], timeout: float) -> SendResult:
        try:
            if form == "scores":
                return self._send_list(scores, timeout)
            if form == "single":
                return self._send_single(scores, timeout)
            return self._send_ingestion(scores, timeout)
        except httpx.TransportError as exc:
            return SendResult(retry=list(scores), transient_error=f"{type(exc).__name__}: {exc}")

    def _post(self, path: str, body: Any, timeout: float) -> tuple[int, Any, httpx.Headers]:
        token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            response = self._client.post(path, content=orjson.dumps(body), headers=_JSON, timeout=timeout)
        finally:
            detach(token)
        try:
            parsed = response.json()
        except ValueError:
            parsed = response.text
        return response.status_code, parsed, response.headers

    def _failure(
        self, status: int, body: Any, headers: httpx.Headers, scores: Sequence[WireScore], list_form: bool
    ) -> SendResult:
        message = server_message(status, body)
        if status in (404, 405) or (list_form and status == 400 and not self._confirmed):
            raise _Unsupported(message)
        if is_transient(status):
            return SendResult(
                retry=list(scores), retry_after=retry_after_seconds(headers), transient_error=message
            )
        return SendResult(rejected=[message] * len(scores))

    def _send_list(self, scores: Sequence[WireScore], timeout: float) -> SendResult:
        status, body, headers = self._post("api/public/scores", list(scores), timeout)
        if status == 207:
            results = _batch_results(body)
            if results is None:
                return SendResult(rejected=[server_message(207, body)] * len(scores))
            return self._partial(*results, scores)
        if 200 <= status < 300:
            return SendResult(delivered=len(scores))
        return self._failure(status, body, headers, scores, list_form=True)

    def _partial(
        self, rejected: int, errors: list[dict[str, Any]], scores: Sequence[WireScore]
    ) -> SendResult:
        """207: retry only the scores an error names with a transient status; errors that name no score
        cannot be retried safely and count as permanent rejections. What no error accounts for was
        accepted."""
        by_id = {s["id"]: s for s in scores}
        result = SendResult()
        unnamed: list[str] = []
        for error in errors:
            ident, status = _error_id(error), _error_status(error)
            message = server_message(status, error["message"])
            if ident in by_id and status is not None and is_transient(status):
                result.retry.append(by_id.pop(ident))
                result.transient_error = message
            elif ident in by_id:
                by_id.pop(ident)
                result.rejected.append(message)
            else:
                unnamed.append(message)
        missing = min(len(by_id), max(0, rejected - len(result.retry) - len(result.rejected)))
        for i in range(missing):
            result.rejected.append(unnamed[i] if i < len(unnamed) else "rejected without a message")
        result.delivered = max(0, len(scores) - len(result.retry) - len(result.rejected))
        return result

    def _send_single(self, scores: Sequence[WireScore], timeout: float) -> SendResult:
        result = SendResult()
        for i, score in enumerate(scores):
            try:
                status, body, headers = self._post("api/public/scores", score, timeout)
            except httpx.TransportError as exc:
                result.retry.extend(scores[i:])
                result.transient_error = f"{type(exc).__name__}: {exc}"
                return result
            if 200 <= status < 300:
                result.delivered += 1
                continue
            if status in (404, 405) and result.delivered == 0:
                raise _Unsupported(server_message(status, body))
            if is_transient(status):
                result.retry.extend(scores[i:])
                result.retry_after = retry_after_seconds(headers)
                result.transient_error = server_message(status, body)
                return result
            result.rejected.append(server_message(status, body))
        return result

    def _send_ingestion(self, scores: Sequence[WireScore], timeout: float) -> SendResult:
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
        status, reply, headers = self._post("api/public/ingestion", {"batch": batch}, timeout)
        if not 200 <= status < 300:
            return self._failure(status, reply, headers, scores, list_form=False)
        successes, errors = _ingestion_items(reply, "successes"), _ingestion_items(reply, "errors")
        if successes is None or errors is None:
            return SendResult(rejected=[server_message(status, reply)] * len(scores))
        result = SendResult(delivered=len(successes))
        for error in errors:
            failed = events.get(str(error.get("id")))
            message = server_message(error["status"], error.get("message") or error.get("error"))
            if failed is not None and is_transient(error["status"]):
                result.retry.append(failed)
                result.transient_error = message
            else:
                result.rejected.append(message)
        return result
