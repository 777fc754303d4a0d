"""The JSON shape of check results: documented keys always, partial credit and evidence when present."""

from __future__ import annotations

import json

from otel_traj.serialize import check_to_dict, verdict_to_dict
from otel_traj.verdict import CheckResult, Verdict
from tests.support_trajectories import clean_run

DOCUMENTED = {"name", "status", "severity", "reason", "steps"}


def test_check_without_score_or_detail_has_only_the_documented_keys() -> None:
    data = check_to_dict(CheckResult("scope", "fail", "critical", "list_invoices used C028", ("s3",)))
    assert data == {
        "name": "scope",
        "status": "fail",
        "severity": "critical",
        "reason": "list_invoices used C028",
        "steps": ["s3"],
    }


def test_check_with_score_and_detail_carries_them() -> None:
    detail = {"missing": ["create_refund_request"], "extra": [], "matched": 2}
    check = CheckResult("trajectory_match", "fail", "error", "1 missing", ("s1", "s2"), 2 / 3, detail)
    data = check_to_dict(check)
    assert set(data) == DOCUMENTED | {"score", "detail"}
    assert data["score"] == 0.6667
    assert data["detail"] == detail
    assert data["detail"] is not detail


def test_a_zero_score_is_kept() -> None:
    data = check_to_dict(CheckResult("tool_selection", "fail", "error", "nothing matched", score=0.0))
    assert data["score"] == 0.0 and "detail" not in data


def test_verdict_json_round_trips_score_and_detail() -> None:
    checks = [
        CheckResult("budget", "pass", "warning", "within budget"),
        CheckResult("trajectory_match", "pass", "error", "all matched", score=1.0, detail={"mode": "strict"}),
    ]
    data = json.loads(json.dumps(verdict_to_dict(Verdict(clean_run(), checks))))
    budget, match = data["checks"]
    assert set(budget) == DOCUMENTED
    assert match["score"] == 1.0 and match["detail"] == {"mode": "strict"}
