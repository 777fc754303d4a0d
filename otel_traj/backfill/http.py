"""GETs that are polite to a backend: at most ``rps`` requests a second, 429 and 5xx retried with
exponential backoff and jitter, never sooner than the server's ``Retry-After``.

Requests run with OpenTelemetry instrumentation suppressed, as the sinks' do, so an instrumented
httpx does not trace them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value

from otel_traj.delivery import backoff_delay
from otel_traj.sinks.langfuse_transport import is_transient, retry_after_seconds, server_message

# A server asking for a longer wait than this is waited for this long.
MAX_RETRY_AFTER_S = 300.0


class ReadError(RuntimeError):
    """A request that failed for good: a permanent status (``status``), or retries exhausted."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(slots=True)
class RequestCounts:
    requests: int = 0
    retries: int = 0
    throttled: int = 0


class PoliteClient:
    """One HTTP client to one backend; ``get`` returns the parsed JSON body of a 2xx answer."""

    def __init__(
        self,
        base_url: str,
        *,
        auth: httpx.Auth | None = None,
        headers: Mapping[str, str] | None = None,
        rps: float = 5.0,
        max_retries: int = 6,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rps <= 0:
            raise ValueError(f"rps={rps!r}: must be positive")
        self.counts = RequestCounts()
        self._interval = 1.0 / rps
        self._max_retries = max(0, max_retries)
        self._backoff = (backoff_initial, backoff_max)
        self._sleep = sleep
        self._clock = clock
        self._next_at = float("-inf")
        self._client = httpx.Client(
            base_url=base_url.rstrip("/") + "/",
            auth=auth,
            headers={"User-Agent": "otel-traj", **(headers or {})},
            timeout=timeout,
        )

    def close(self) -> None:
        self._client.close()

    def _pace(self) -> None:
        wait = self._next_at - self._clock()
        if wait > 0:
            self._sleep(wait)
        self._next_at = max(self._clock(), self._next_at) + self._interval

    def _once(self, path: str, params: Mapping[str, Any]) -> httpx.Response:
        self._pace()
        self.counts.requests += 1
        token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            # No params at all, not an empty mapping: httpx would drop the query the path holds.
            query = {k: v for k, v in params.items() if v is not None}
            return self._client.get(path, params=query or None)
        finally:
            detach(token)

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """The JSON body of ``GET path``; raises :class:`ReadError` when it cannot be had."""
        problem = ""
        for attempt in range(self._max_retries + 1):
            retry_after = None
            try:
                response = self._once(path, params or {})
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if 200 <= response.status_code < 300:
                    try:
                        return orjson.loads(response.content)
                    except orjson.JSONDecodeError:
                        raise ReadError(f"GET {path}: the answer is not JSON") from None
                body = _body(response)
                problem = server_message(response.status_code, body)
                if not is_transient(response.status_code):
                    raise ReadError(f"GET {path}: {problem}", status=response.status_code)
                self.counts.throttled += response.status_code == 429
                retry_after = retry_after_seconds(response.headers)
            if attempt == self._max_retries:
                break
            self.counts.retries += 1
            initial, cap = self._backoff
            at_least = None if retry_after is None else min(retry_after, MAX_RETRY_AFTER_S)
            self._sleep(backoff_delay(attempt, initial, cap, at_least))
        raise ReadError(f"GET {path}: {problem} (after {self._max_retries + 1} attempts)")


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text
