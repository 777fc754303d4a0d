"""Versions on every verdict: from real SDK spans (agent version, prompt) and the real fixtures."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.adapters.otlp_proto import views_from_bytes
from otel_traj.config import AssemblerConfig
from otel_traj.grader import Grader
from otel_traj.offline import trajectories_from_views
from otel_traj.policy import load_policy, parse_policy
from otel_traj.serialize import verdict_to_dict
from otel_traj.trajectory import Trajectory
from tests.real_frameworks import FRAMEWORKS as REAL_FRAMEWORKS
from tests.real_frameworks import run_files

REAL = Path(__file__).parent / "fixtures" / "real"
POLICY = Path(__file__).parent.parent / "examples" / "policies" / "support_agent.yaml"


def sdk_run(agent_attributes: dict[str, str], chat_attributes: dict[str, str]) -> Trajectory:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop", "service.version": "2.4.0"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span(
        "invoke_agent support",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support",
            **agent_attributes,
        },
    ):
        for model in ("gpt-4o-mini", "gpt-4o", "gpt-4o-mini"):
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": model,
                "gen_ai.response.model": model,
                "gen_ai.usage.input_tokens": 100,
                "gen_ai.usage.output_tokens": 20,
                **chat_attributes,
            }
            with tracer.start_as_current_span(f"chat {model}", attributes=attributes):
                pass
    provider.shutdown()
    views = views_from_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())
    (trajectory,) = trajectories_from_views(views, AssemblerConfig())
    return trajectory


def test_agent_version_attribute_models_and_langfuse_prompt() -> None:
    trajectory = sdk_run(
        {"gen_ai.agent.version": "7"},
        {"langfuse.observation.prompt.name": "refunds", "langfuse.observation.prompt.version": "12"},
    )
    policy = parse_policy(
        {"version": 3, "defaults": {"tools": {"contracts": {"refund": {"side_effect": True}}}}}
    )
    versions = Grader(policy).grade(trajectory).versions
    assert versions.agent == "7"
    assert versions.models == ("gpt-4o-mini", "gpt-4o")
    assert versions.prompt == "refunds@12"
    assert versions.policy == policy.policy_version
    assert versions.tool_contracts is not None and len(versions.tool_contracts) == 12


def test_service_version_and_openinference_prompt_template_version() -> None:
    trajectory = sdk_run({}, {"llm.prompt_template.version": "v3"})
    verdict = Grader(parse_policy({})).grade(trajectory)
    assert verdict.versions.agent == "2.4.0"
    assert verdict.versions.prompt == "v3"
    assert verdict.versions.tool_contracts is None


def test_a_contract_change_changes_the_hash_and_nothing_else_does() -> None:
    def contracts(policy: Mapping[str, Any]) -> str | None:
        trajectory = sdk_run({}, {})
        return Grader(parse_policy(policy)).grade(trajectory).versions.tool_contracts

    side_effect = {"defaults": {"tools": {"contracts": {"refund": {"side_effect": True}}}}}
    grounded = {
        "defaults": {"tools": {"contracts": {"refund": {"side_effect": True, "grounded": ["invoice_id"]}}}}
    }
    with_budget = {**side_effect, "version": 9}
    assert contracts(side_effect) != contracts(grounded)
    assert contracts(side_effect) == contracts(with_budget)


def test_versions_in_the_json_of_every_real_run() -> None:
    grader = Grader(load_policy(POLICY))
    for folder in sorted(p for p in REAL.iterdir() if (p / "clean.otlp.pb").exists()):
        inputs = read_trace_inputs(run_files(folder.name, "clean"))
        (trajectory,) = trajectories_from_views(inputs.views, AssemblerConfig())
        data = verdict_to_dict(grader.grade(trajectory))
        # The service version, unless the instrumentation's own resource names none (AgentOps).
        service = REAL_FRAMEWORKS[folder.name].service
        assert data["versions"]["agent"] == (service[1] if service else "1.0.0"), folder.name
        model = REAL_FRAMEWORKS[folder.name].model_name.removeprefix("openai/")
        assert data["versions"]["models"] in ([model], [f"openai/{model}"]), folder.name
        assert data["versions"]["policy"] == data["policy_version"]
