"""OpenAI Agents SDK traced by OpenInference, graded by otel-traj.

    pip install "otel-traj[examples]"    # openai-agents, openinference-instrumentation-openai-agents
    python -m examples.openai_agents_openinference

The model is a scripted local chat-completions server, so this runs offline.
"""

from __future__ import annotations

import asyncio

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from openai import AsyncOpenAI
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.sdk.trace import TracerProvider

from examples import _scenario as scenario
from examples._fake_openai import fake_openai
from otel_traj.processor import TrajectoryProcessor
from otel_traj.verdict import Verdict


def main() -> list[Verdict]:
    verdicts: list[Verdict] = []
    provider = TracerProvider()
    provider.add_span_processor(TrajectoryProcessor(policy=scenario.POLICY, on_verdict=verdicts.append))
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    with fake_openai() as client_args:
        client = AsyncOpenAI(**client_args)
        agent = Agent(
            name=scenario.AGENT_NAME,
            instructions=scenario.INSTRUCTIONS,
            model=OpenAIChatCompletionsModel(model=scenario.MODEL_NAME, openai_client=client),
            tools=[function_tool(tool) for tool in scenario.TOOLS],
        )
        asyncio.run(
            Runner.run(agent, scenario.USER_MESSAGE, run_config=RunConfig(workflow_name=scenario.AGENT_NAME))
        )
    provider.shutdown()  # grades what is still buffered
    scenario.print_verdicts(verdicts)
    return verdicts


if __name__ == "__main__":
    main()
