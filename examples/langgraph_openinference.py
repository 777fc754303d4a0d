"""A LangGraph agent (LangChain ``create_agent``) traced by OpenInference, graded by otel-traj.

    pip install "otel-traj[examples]"  # langgraph, langchain-openai, openinference-instrumentation-langchain
    python -m examples.langgraph_openinference

The model is a scripted local chat-completions server, so this runs offline.
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain.tools import tool
from langchain_openai import ChatOpenAI
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.trace import TracerProvider

from examples import _scenario as scenario
from examples._fake_openai import fake_openai
from otel_traj.processor import TrajectoryProcessor
from otel_traj.verdict import Verdict


def main() -> list[Verdict]:
    verdicts: list[Verdict] = []
    provider = TracerProvider()
    provider.add_span_processor(TrajectoryProcessor(policy=scenario.POLICY, on_verdict=verdicts.append))
    LangChainInstrumentor().instrument(tracer_provider=provider)

    with fake_openai() as client_args:
        model = ChatOpenAI(model=scenario.MODEL_NAME, **client_args)
        agent = create_agent(
            model,
            tools=[tool(fn) for fn in scenario.TOOLS],
            system_prompt=scenario.INSTRUCTIONS,
            name=scenario.AGENT_NAME,
        )
        agent.invoke({"messages": [{"role": "user", "content": scenario.USER_MESSAGE}]})
    provider.shutdown()  # grades what is still buffered
    scenario.print_verdicts(verdicts)
    return verdicts


if __name__ == "__main__":
    main()
