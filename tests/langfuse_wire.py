"""What the Langfuse test server checks and records: a score body checked as the Langfuse API checks
it (with the ``langfuse`` package's own generated models, strictly, plus the server's own rules:
exactly one subject, BOOLEAN is 0/1, ...), the requests and spans it received, and the faults a test
switches on."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pydantic
from langfuse.api.core.pydantic_utilities import parse_obj_as

_ENVIRONMENT = re.compile(r"^(?!langfuse)[a-z0-9_-]{1,40}$")


@dataclass(slots=True, frozen=True)
class StoredSpan:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str


@dataclass(slots=True, frozen=True)
class RequestRecord:
    method: str
    path: str
    status: int
    scores: int


@dataclass
class Faults:
    fail_times: int = 0
    fail_status: int = 500
    retry_after: str | None = None
    reject_status: int | None = None
    reject_message: str = "Invalid request data"
    delay: float = 0.0
    # While set, every request is held until the event fires: a server that does not answer at all.
    gate: threading.Event | None = None
    # score name -> (status, remaining times; -1 = always) for 207 partial rejection
    partial: dict[str, list[int]] = field(default_factory=dict)


class Invalid(Exception):
    pass


def check_score(model: type[pydantic.BaseModel], body: Any, with_timestamp: bool) -> dict[str, Any]:
    """Validate one score like the API does; returns the stored form."""
    if not isinstance(body, dict):
        raise Invalid(f"expected an object, received {type(body).__name__}")
    try:
        score: Any = parse_obj_as(model, body)
    except pydantic.ValidationError as exc:
        raise Invalid(str(exc).replace("\n", " ")) from exc
    if score.model_extra:
        raise Invalid(f"unrecognized keys: {sorted(score.model_extra)}")
    subjects = [k for k in ("trace_id", "session_id", "dataset_run_id") if getattr(score, k)]
    if len(subjects) != 1:
        raise Invalid(
            "Provide exactly one of traceId (with optional observationId), sessionId or datasetRunId"
        )
    if score.observation_id and not score.trace_id:
        raise Invalid("observationId requires traceId")
    data_type = str(score.data_type.value) if score.data_type is not None else "NUMERIC"
    value = score.value
    if data_type in ("CATEGORICAL", "TEXT"):
        if not isinstance(value, str):
            raise Invalid(f"{data_type} scores need a string value")
        if data_type == "TEXT" and not 1 <= len(value) <= 500:
            raise Invalid("TEXT values are 1-500 characters")
    elif isinstance(value, str) or not math.isfinite(value):
        raise Invalid(f"{data_type} scores need a finite number")
    elif data_type == "BOOLEAN" and value not in (0, 1):
        raise Invalid("BOOLEAN scores must be 0 or 1")
    if score.environment is not None and not _ENVIRONMENT.match(score.environment):
        raise Invalid(f"invalid environment {score.environment!r}")
    stored: dict[str, Any] = json.loads(json.dumps(body))
    stored.setdefault("id", f"srv-{time.monotonic_ns()}")
    stored["dataType"] = data_type
    if with_timestamp and "timestamp" not in stored:
        stored["timestamp"] = dt.datetime.now(dt.UTC).isoformat()
    return stored
