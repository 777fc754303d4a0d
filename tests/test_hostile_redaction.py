"""Secrets in hostile shapes never reach a Langfuse comment or the SQLite file: values cut short,
padded with line breaks, tabs or double spaces, quoted inside nested values, or in arguments that are
not JSON. Graded with the real grader, delivered to the test server (bodies validated with the
``langfuse`` package's models), stored in a real SQLite file."""

from __future__ import annotations

import json
import string
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_traj.checks.base import failed, render_args
from otel_traj.grader import Grader
from otel_traj.policy import parse_policy
from otel_traj.redact import (
    _CARD,
    MASK,
    Redactor,
    TraceRedaction,
    _mask_card,
    default_sensitive_key,
    mask_keyed,
    mask_patterns,
    redact_text,
)
from otel_traj.sinks.langfuse_scores import verdict_scores
from otel_traj.sinks.store import SqliteSink, connect, prepare, read_verdicts
from otel_traj.steps import ToolCall, span_hex
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import Verdict
from tests.langfuse_helpers import fast_sink
from tests.langfuse_server import LangfuseTestServer
from tests.properties import examples

LONG_SECRET = "sk-live-" + "A1b2C3d4" * 12
REPEATS = parse_policy(
    {
        "defaults": {
            "repeats": {"max_identical": 1},
            "tools": {"contracts": {"transfer": {"redact": ["account_ref"]}}},
        }
    }
)

# The part of a secret a test looks for: long enough that finding it anywhere means a leak.
cores = st.text(string.ascii_letters + string.digits, min_size=8, max_size=24).map(lambda s: "Zq" + s)
hostile = st.sampled_from(["", "\n", "\t", "  ", " \r\n", '"', "'", '\\"', "\\", ' "x" ', "'; --"])


def _calls(name: str, n: int = 2, **fields: object) -> list[ToolCall]:
    return [
        ToolCall(name=name, span_id=i, step_id=span_hex(i), start_ns=i, end_ns=i + 1, **fields)  # type: ignore[arg-type]
        for i in range(1, n + 1)
    ]


def _trajectory(calls: list[ToolCall], trace_id: int = 0xABC) -> Trajectory:
    return Trajectory(trace_id=trace_id, agent="a", tool_calls=calls, start_ns=0, end_ns=10**18)


def _comments(verdict: Verdict, redactor: Redactor | None = None) -> str:
    scores = verdict_scores(verdict, redactor or Redactor(REPEATS.is_sensitive))
    return "\n".join(str(s.get("comment", "")) + json.dumps(s["metadata"]) for s in scores)


def test_a_long_secret_cut_in_a_reason_leaks_no_prefix() -> None:
    verdict = Grader(REPEATS).grade(
        _trajectory(_calls("lookup", arguments={"api_key": LONG_SECRET, "q": "x"}))
    )
    repeats = next(c for c in verdict.checks if c.name == "repeats")
    assert repeats.failed and "api_key=[REDACTED]" in repeats.reason
    text = _comments(verdict)
    assert "sk-live" not in text and "A1b2C3d4" not in text


def test_a_policy_key_cut_in_a_reason_leaks_no_prefix() -> None:
    """``account_ref`` is sensitive only by the policy: the check cannot know, the sink masks it."""
    verdict = Grader(REPEATS).grade(_trajectory(_calls("transfer", arguments={"account_ref": LONG_SECRET})))
    text = _comments(verdict)
    assert "account_ref=" in text and "sk-live" not in text and "A1b2C3d4" not in text


def test_arguments_that_are_not_json_are_masked_by_key() -> None:
    calls = _calls("login", 3, arguments_text="password=hunter2 user=bob")
    calls[-1] = replace(calls[-1], ok=False, error_message="login failed for hunter2")
    verdict = Grader(REPEATS).grade(_trajectory(calls))
    reasons = " ".join(c.reason for c in verdict.checks)
    assert "login(password=[REDACTED] user=bob)" in reasons and "failed for hunter2" in reasons
    assert "hunter2" not in _comments(verdict)
    stored = json.dumps(prepare(verdict, Redactor()))
    assert "hunter2" not in stored and "user=bob" in stored


def test_key_value_forms_in_free_text() -> None:
    keys = {"password", "token", "authorization", "credentials"}

    def sensitive(key: str) -> bool:
        return key.lower() in keys

    cases = {
        "password=hunter2 user=bob": "password=[REDACTED] user=bob",
        "token: abc123, next": "token: [REDACTED], next",
        '{"token": "a\\"b c", "n": 1}': '{"token": "[REDACTED]", "n": 1}',
        "Authorization: Bearer abc.def\nok": "Authorization: [REDACTED]\nok",
        'credentials={"u": "}", "p": 2}, x=1': "credentials=[REDACTED], x=1",
        "password=sk-live-A1b2…": "password=[REDACTED]",
    }
    for text, expected in cases.items():
        assert mask_keyed(text, sensitive) == expected, text


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    core=cores, before=hostile, after=hostile, form=st.sampled_from(["kv", "repr", "json", "nested", "bare"])
)
def test_hostile_secret_never_reaches_a_comment_or_the_store(
    core: str, before: str, after: str, form: str
) -> None:
    """The value of a sensitive argument, padded with whitespace and quotes, quoted in a reason in
    whatever printed form, never appears in a comment or in the stored verdict."""
    value = f"{before}{core}{after}"
    arguments = {"session": {"password": value}, "q": "x"}
    quoted = {
        "kv": f"lookup used password={value}",
        "repr": f"lookup got {arguments!r}",
        "json": f"lookup got {json.dumps(arguments)}",
        "nested": f"lookup got {json.dumps(json.dumps(arguments))}",
        "bare": f"lookup got {value} back",
    }[form]
    traj = _trajectory(_calls("lookup", 1, arguments=arguments))
    # ``failed`` folds whitespace, as every check's result does.
    verdict = Verdict(traj, [failed("custom", "error", quoted, (span_hex(1),))], outcome="fail", score=0.0)
    assert core not in _comments(verdict)
    assert core not in json.dumps(prepare(verdict, Redactor()))


@settings(max_examples=examples(100), deadline=None)
@given(core=cores, pad=hostile, key=st.sampled_from(["password", "api_key", "Authorization", "secret_token"]))
def test_render_args_masks_before_it_cuts_and_folds(core: str, pad: str, key: str) -> None:
    value = f"{pad}{core * 4}{pad}"
    structured = ToolCall(name="t", span_id=1, arguments={key: value, "user": "bob"})
    text = ToolCall(name="t", span_id=1, arguments_text=f"{key}={value} user=bob")
    for call in (structured, text):
        rendered = render_args(call)
        assert core[:6] not in rendered and MASK in rendered
    assert core[:6] not in redact_text(f'{{"{key}": {json.dumps(value)}}}')


def test_scores_reach_the_server_redacted() -> None:
    verdict = Grader(REPEATS).grade(_trajectory(_calls("lookup", arguments={"api_key": LONG_SECRET + "\n"})))
    with LangfuseTestServer().running() as server:
        sink = fast_sink(server, redact=REPEATS.is_sensitive)
        sink.export(verdict)
        assert sink.force_flush(10_000)
        sink.shutdown()
        scores = server.scores_for(f"{0xABC:032x}")
    assert scores and sink.report().delivered == len(scores)
    assert not any("A1b2C3d4" in json.dumps(s) for s in scores)
    assert any("api_key=[REDACTED]" in s.get("comment", "") for s in scores)


def _store(tmp_path: Path, verdict: Verdict, **options: object) -> tuple[bytes, dict[str, object]]:
    path = tmp_path / "store.db"
    sink = SqliteSink(path=path, **options)  # type: ignore[arg-type]
    sink.export(verdict)
    assert sink.force_flush(10_000)
    sink.shutdown()
    with connect(path) as conn:
        (stored,) = read_verdicts(conn)
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("store.db"))
    return raw, stored


def test_the_store_masks_secret_looking_keys_by_default(tmp_path: Path) -> None:
    calls = _calls(
        "lookup", arguments={"api_key": LONG_SECRET, "customer_id": "C023"}, result="ok " + LONG_SECRET
    )
    verdict = Grader(REPEATS).grade(_trajectory(calls))
    raw, stored = _store(tmp_path, verdict)
    assert b"A1b2C3d4" not in raw
    call = stored["tool_calls"][0]  # type: ignore[index]
    assert call["arguments"] == {"api_key": MASK, "customer_id": "C023"}
    assert call["result"] == f"ok {MASK}"


def test_the_store_takes_the_policy_and_can_keep_values(tmp_path: Path) -> None:
    calls = _calls("transfer", arguments={"account_ref": "ACC-778812", "api_key": "sk-abc-123"})
    verdict = Grader(REPEATS).grade(_trajectory(calls))
    (tmp_path / "policy").mkdir()
    raw, stored = _store(tmp_path / "policy", verdict, redact=REPEATS.is_sensitive)
    assert b"ACC-778812" not in raw and b"sk-abc-123" not in raw
    assert stored["tool_calls"][0]["arguments"] == {"account_ref": MASK, "api_key": MASK}  # type: ignore[index]
    (tmp_path / "clear").mkdir()
    raw, stored = _store(tmp_path / "clear", verdict, redact=False)
    assert stored["tool_calls"][0]["arguments"] == {"account_ref": "ACC-778812", "api_key": "sk-abc-123"}  # type: ignore[index]


def test_a_card_number_stands_alone_a_hex_id_holding_its_digits_is_none() -> None:
    assert mask_patterns("card 4111 1111 1111 1111, expires") == f"card {MASK}, expires"
    assert mask_patterns("pan=4111111111111111") == f"pan={MASK}"
    # Span ids are hex: 16 decimal digits in a row happen, glued to the id's letters.
    for text in ("step 4111111111111111f4", "step a4111111111111111", "step_4111111111111111"):
        assert mask_patterns(text) == text


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["4111", "1111", "4012888888881881", " ", "-", "x", "7", "@", "a.b", "٤", "password="]
        ),
        max_size=30,
    )
)
def test_card_masking_by_runs_masks_what_the_pattern_finds(parts: list[str]) -> None:
    """Looking for cards only in runs of digits, spaces and dashes finds every card the pattern
    finds in the whole text, and the cached path for repeated texts gives the same result."""
    text = "".join(parts)
    whole = _CARD.sub(_mask_card, text)
    if "@" not in text:  # e-mail masking aside
        assert mask_patterns(text) == whole
    assert TraceRedaction(default_sensitive_key, ("t",), ()).text(text) == redact_text(text)
    assert redact_text(text) == mask_patterns(mask_keyed(text, lambda key: default_sensitive_key("", key)))
