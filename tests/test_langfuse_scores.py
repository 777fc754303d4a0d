"""Pure parts of the Langfuse sink (score building, wire form, redaction, Retry-After), the strictness
of the test server that holds the wire form to the ``langfuse`` package's models, and what importing
the sink costs."""

from __future__ import annotations

import email.utils
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from langfuse.api.core.jsonable_encoder import jsonable_encoder
from langfuse.api.core.pydantic_utilities import parse_obj_as
from langfuse.api.scores.types.create_score_request import CreateScoreRequest

from otel_traj.redact import MASK, Redactor, mask_patterns
from otel_traj.sinks.langfuse_scores import observation_of, verdict_scores
from otel_traj.sinks.langfuse_transport import retry_after_seconds
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Verdict
from tests.langfuse_helpers import END_NS, SCORES, make_verdict
from tests.langfuse_server import LangfuseTestServer


def test_wire_form_is_what_the_package_itself_would_send() -> None:
    """Each score parses strictly as the package's ``CreateScoreRequest`` and the package's own
    encoder writes it back unchanged: same field names, same values, same timestamp format."""
    for score in verdict_scores(make_verdict(0x1), Redactor(), "prod"):
        model = parse_obj_as(CreateScoreRequest, score)
        assert not model.model_extra
        assert jsonable_encoder(model) == score


def test_timestamp_is_the_trajectory_end() -> None:
    scores = verdict_scores(make_verdict(0xA000, end_ns=END_NS + 1_500_000), Redactor())
    assert {s["timestamp"] for s in scores} == {"2026-01-01T00:00:00.001500Z"}


def test_ids_are_stable_and_distinct() -> None:
    first = [s["id"] for s in verdict_scores(make_verdict(0x1), Redactor())]
    again = [s["id"] for s in verdict_scores(make_verdict(0x1), Redactor())]
    other = [s["id"] for s in verdict_scores(make_verdict(0x2), Redactor())]
    assert first == again and len(set(first)) == len(first) and not set(first) & set(other)


def test_unobserved_steps_attach_to_the_requesting_model_call() -> None:
    assert observation_of("00000000000000ab") == "00000000000000ab"
    assert observation_of("00000000000000ab:1") == "00000000000000ab"
    assert observation_of("not-a-span") is None
    traj = Trajectory(trace_id=7, end_ns=10**18)
    verdict = Verdict(
        traj, [CheckResult("claims", "fail", "critical", "x", ("00000000000000ab:0", "00000000000000ab:1"))]
    )
    observed = [s["observationId"] for s in verdict_scores(verdict, Redactor()) if "observationId" in s]
    assert observed == ["00000000000000ab"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail alice.b@example.co.uk now", f"mail {MASK} now"),
        ("card 4111-1111-1111-1111 used", f"card {MASK} used"),
        ("card 4111 1111 1111 1112 is not Luhn-valid", "card 4111 1111 1111 1112 is not Luhn-valid"),
        ("order 20240101123456 at 10:00", "order 20240101123456 at 10:00"),
    ],
)
def test_patterns_are_masked(text: str, expected: str) -> None:
    assert mask_patterns(text) == expected


def test_sensitive_argument_values_are_masked_by_key() -> None:
    traj = Trajectory(
        trace_id=1,
        tool_calls=[
            ToolCall(
                name="lookup",
                span_id=1,
                arguments={"customer": {"password": "hunter22", "name": "Bob"}, "n": 1},
            ),
            ToolCall(name="pay", span_id=2, arguments_text='{"account": "ACC-991", "memo": "rent"}'),
        ],
    )
    default = Redactor()
    assert default.secret_values(traj) == ["hunter22"]
    by_set = Redactor({"account"})
    assert set(by_set.secret_values(traj)) == {"hunter22", "ACC-991"}
    by_policy = Redactor(lambda tool, key: tool == "pay" and key == "memo")
    assert by_policy.secret_values(traj) == ["rent"]
    assert (
        by_set.clean("paid from ACC-991 with hunter22", by_set.secret_values(traj))
        == f"paid from {MASK} with {MASK}"
    )


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    delay = retry_after_seconds({"Retry-After": future})
    assert delay is not None and 25 < delay <= 30
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None


@pytest.fixture
def server() -> Iterator[LangfuseTestServer]:
    with LangfuseTestServer().running() as srv:
        yield srv


def test_server_double_is_strict(server: LangfuseTestServer) -> None:
    """The sink's tests only mean something if the double refuses what the real API refuses."""
    auth = {"Authorization": server.auth_header}
    good = {"id": "x", "traceId": "a" * 32, "name": "n", "value": 1, "dataType": "BOOLEAN"}
    cases = [
        ({**good, "unknownField": 1}, "unrecognized keys"),
        ({k: v for k, v in good.items() if k != "name"}, "name"),
        ({**good, "value": 2}, "BOOLEAN scores must be 0 or 1"),
        ({**good, "dataType": "CATEGORICAL"}, "string value"),
        ({k: v for k, v in good.items() if k != "traceId"}, "exactly one of"),
    ]
    for body, error in cases:
        response = httpx.post(server.url + SCORES, json=[body], headers=auth)
        assert response.status_code == 400 and error in response.json()["error"]
    assert httpx.post(server.url + SCORES, json=[good]).status_code == 401
    assert httpx.post(server.url + SCORES, json=[good], headers=auth).status_code == 202
    page = httpx.get(server.url + SCORES, params={"traceId": "a" * 32}, headers=auth).json()
    assert page["meta"]["totalItems"] == 1 and page["data"][0]["stringValue"] == "True"


def test_importing_the_sink_loads_neither_langfuse_nor_httpx() -> None:
    """``otel-traj serve`` and ``grade`` import the sink whether or not Langfuse is configured."""
    code = (
        "import sys, otel_traj, otel_traj.sinks.langfuse;"
        "print(sorted(m for m in ('langfuse', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
