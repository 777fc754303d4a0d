"""Pure parts of the Langfuse sink: score building, wire form, redaction, Retry-After."""

from __future__ import annotations

import email.utils
import time

import pytest
from langfuse.api.core.jsonable_encoder import jsonable_encoder

from otel_traj.redact import MASK, Redactor, mask_patterns
from otel_traj.sinks.langfuse_scores import observation_of, to_wire, verdict_scores
from otel_traj.sinks.langfuse_transport import retry_after_seconds
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Verdict
from tests.test_langfuse_sink import make_verdict


def test_wire_form_matches_the_package_encoder() -> None:
    for score in verdict_scores(make_verdict(0x1), Redactor(), "prod"):
        assert to_wire(score) == jsonable_encoder(score)


def test_ids_are_stable_and_distinct() -> None:
    first = [s.id for s in verdict_scores(make_verdict(0x1), Redactor())]
    again = [s.id for s in verdict_scores(make_verdict(0x1), Redactor())]
    other = [s.id for s in verdict_scores(make_verdict(0x2), Redactor())]
    assert first == again and len(set(first)) == len(first) and not set(first) & set(other)


def test_unobserved_steps_attach_to_the_requesting_model_call() -> None:
    assert observation_of("00000000000000ab") == "00000000000000ab"
    assert observation_of("00000000000000ab:1") == "00000000000000ab"
    assert observation_of("not-a-span") is None
    traj = Trajectory(trace_id=7, end_ns=10**18)
    verdict = Verdict(
        traj, [CheckResult("claims", "fail", "critical", "x", ("00000000000000ab:0", "00000000000000ab:1"))]
    )
    observed = [s.observation_id for s in verdict_scores(verdict, Redactor()) if s.observation_id]
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
            ToolCall("lookup", 1, arguments={"customer": {"password": "hunter22", "name": "Bob"}, "n": 1}),
            ToolCall("pay", 2, arguments_text='{"account": "ACC-991", "memo": "rent"}'),
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
