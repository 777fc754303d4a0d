"""Policies, runs and a judge sink wired to the local chat server, for the judge's tests."""

from __future__ import annotations

import dataclasses
from typing import Any

from otel_traj.grader import Grader
from otel_traj.judge.client import OpenAIChatModel
from otel_traj.judge.result import JudgeResult
from otel_traj.judge.sink import JudgeSink
from otel_traj.policy import Policy, parse_policy
from otel_traj.sinks.base import Sink
from otel_traj.verdict import Verdict
from tests.judge_server import JudgeServer
from tests.support_trajectories import clean_run

RUBRIC = "Does the final answer address what the user asked for?"


def judge_policy(**judge: Any) -> Policy:
    rule = {"name": "answer_addresses_request", "rubric": RUBRIC, "sample": 1.0, **judge}
    return parse_policy(
        {
            "defaults": {
                "judges": [rule],
                "budget": {"max_tool_calls": 8},
                "tools": {
                    "contracts": {"create_refund_request": {"side_effect": True, "grounded": ["invoice_id"]}}
                },
            }
        }
    )


def verdict(trace_id: int = 0xABC, policy: Policy | None = None) -> Verdict:
    run = dataclasses.replace(clean_run(), trace_id=trace_id)
    return Grader(policy or judge_policy()).grade(run)


def judge_sink(
    server: JudgeServer,
    policy: Policy,
    results: list[JudgeResult],
    sinks: tuple[Sink, ...] = (),
    **options: Any,
) -> JudgeSink:
    model = OpenAIChatModel(base_url=server.base_url, api_key="test-key")
    return JudgeSink(policy=policy, sinks=sinks, on_result=[results.append], model=model, **options)
