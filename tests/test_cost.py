"""Cost of model calls and runs, checked against genai-prices' own calculation on the real fixtures."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import genai_prices
import pytest
from genai_prices import Usage, calc_price

from otel_traj import cost
from otel_traj.adapters.files import read_trace_inputs
from otel_traj.checks.budget import check_budget
from otel_traj.config import AssemblerConfig
from otel_traj.cost import price_call, run_cost
from otel_traj.offline import trajectories_from_views
from otel_traj.policy import Budget
from otel_traj.serialize import trajectory_to_dict
from otel_traj.steps import ModelCall
from otel_traj.trajectory import Trajectory
from tests.real_frameworks import run_files
from tests.real_runs import with_model

REAL = Path(__file__).parent / "fixtures" / "real"
FRAMEWORKS = sorted(p.name for p in REAL.iterdir() if (p / "clean.otlp.pb").exists())


def real_run(framework: str, kind: str = "clean") -> Trajectory:
    inputs = read_trace_inputs(run_files(framework, kind))
    (trajectory,) = trajectories_from_views(inputs.views, AssemblerConfig())
    return trajectory


def expected_price(call: ModelCall) -> float:
    """What genai-prices itself says for the call's usage (the model without its provider prefix; an
    OpenAI model as OpenAI's, another as its recorded provider's, such as `aws.bedrock`, else
    wherever genai-prices finds it)."""
    usage = Usage(
        input_tokens=call.input_tokens,
        output_tokens=call.output_tokens,
        cache_read_tokens=call.cache_read_tokens,
        cache_write_tokens=call.cache_write_tokens,
        output_reasoning_tokens=call.reasoning_tokens,
    )
    model = (call.model or "").removeprefix("openai/")
    provider = "openai" if model.startswith("gpt-") else call.provider
    return float(calc_price(usage, model, provider_id=provider).total_price)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_real_run_is_priced_as_genai_prices_prices_it(framework: str) -> None:
    for kind in ("clean", "violating"):
        trajectory = real_run(framework, kind)
        cost = run_cost(trajectory)
        assert trajectory.model_calls
        for call, call_cost in zip(trajectory.model_calls, cost.calls, strict=True):
            assert call_cost.reason is None
            assert call_cost.usd == pytest.approx(expected_price(call), rel=1e-9)
        assert cost.total_usd == pytest.approx(
            sum(expected_price(c) for c in trajectory.model_calls), rel=1e-9
        )
        assert cost.total_usd is not None and cost.total_usd > 0
        data = trajectory_to_dict(trajectory)
        assert data["total_cost_usd"] == cost.total_usd
        assert [m["cost_usd"] for m in data["model_calls"]] == [c.usd for c in cost.calls]


def test_a_provider_prefixed_model_is_priced_as_the_providers_model() -> None:
    call = real_run("google_adk").model_calls[0]
    assert call.model == "openai/gpt-4o-mini"
    bare = replace(call, model="gpt-4o-mini")
    assert price_call(call).usd == price_call(bare).usd is not None


def test_cached_and_reasoning_tokens_are_priced_as_the_database_says() -> None:
    call = ModelCall(
        span_id=1, model="gpt-4o-mini", provider="openai", input_tokens=10_000, output_tokens=2_000
    )
    cached = replace(call, cache_read_tokens=8_000)
    assert price_call(cached).usd == pytest.approx(
        float(
            calc_price(
                Usage(input_tokens=10_000, output_tokens=2_000, cache_read_tokens=8_000),
                "gpt-4o-mini",
                provider_id="openai",
            ).total_price
        )
    )
    # Cached input is cheaper than fresh input for this model: the discount was applied.
    assert (price_call(cached).usd or 0) < (price_call(call).usd or 0)


def test_a_price_is_computed_once_per_price_entry_and_counts_and_the_memory_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    computed: list[int] = []

    def counting(usage: Usage, model: str, **kwargs: object) -> object:
        computed.append(1)
        return calc_price(usage, model, **kwargs)

    monkeypatch.setattr(genai_prices, "calc_price", counting)
    monkeypatch.setattr(cost, "_COMPUTED", {})
    call = ModelCall(span_id=1, model="gpt-4o-mini", provider="openai", input_tokens=123, output_tokens=45)
    first = price_call(call).usd
    assert first is not None and price_call(replace(call, span_id=2)).usd == first
    assert len(computed) == 1
    # Other counts, another price; and a price in force at another time is another entry.
    assert price_call(replace(call, output_tokens=46)).usd != first
    assert len(computed) == 2
    for tokens in range(cost.MAX_COMPUTED + 10):
        price_call(replace(call, input_tokens=tokens))
    assert len(cost._COMPUTED) == cost.MAX_COMPUTED


def test_an_unknown_model_costs_null_with_the_reason_never_zero() -> None:
    trajectory = with_model(real_run("openai_agents"), 1, model="acme-llm-9000")
    cost = run_cost(trajectory)
    assert cost.calls[0].usd is not None
    assert cost.calls[1].usd is None
    assert "acme-llm-9000" in (cost.calls[1].reason or "")
    assert cost.total_usd is None
    assert cost.reason is not None and "acme-llm-9000" in cost.reason
    data = trajectory_to_dict(trajectory)
    assert data["total_cost_usd"] is None
    assert "acme-llm-9000" in data["cost_reason"]


def test_a_call_without_tokens_costs_null() -> None:
    call = ModelCall(span_id=1, model="gpt-4o-mini", provider="openai")
    assert price_call(call).usd is None
    assert price_call(call).reason == "tokens not recorded"


def test_max_cost_usd_fails_over_passes_within_and_is_not_measurable_when_unknown() -> None:
    trajectory = real_run("pydantic_ai")
    total = run_cost(trajectory).total_usd
    assert total is not None
    over = check_budget(trajectory, Budget(max_cost_usd=total / 2))
    assert over.status == "fail"
    assert over.reason.startswith("cost $")
    assert check_budget(trajectory, Budget(max_cost_usd=total * 2)).status == "pass"
    unknown = with_model(real_run("pydantic_ai"), 0, model="acme-llm-9000")
    result = check_budget(unknown, Budget(max_cost_usd=1.0))
    assert result.status == "skipped"
    assert "acme-llm-9000" in result.reason
    # Another limit still judged; the unknown cost is named beside it, not counted as 0.
    result = check_budget(unknown, Budget(max_cost_usd=1.0, max_tool_calls=100))
    assert result.status == "pass"
    assert "cost unknown" in result.reason


def test_importing_the_package_and_processor_does_not_load_the_price_database() -> None:
    code = (
        "import sys, otel_traj, otel_traj.processor, otel_traj.grader; print('genai_prices' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
