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

from examples._fake_openai import fake_openai
from examples._scenario import (
    AGENT_NAME,
    INSTRUCTIONS,
    MODEL_NAME,
    POLICY,
    TOOLS,
    USER_MESSAGE,
    print_verdicts,
)
from otel_traj.processor import TrajectoryProcessor
from otel_traj.verdict import Verdict


def main() -> list[Verdict]:
    verdicts: list[Verdict] = []
    provider = TracerProvider()
    provider.add_span_processor(TrajectoryProcessor(policy=POLICY, on_verdict=verdicts.append))
    LangChainInstrumentor().instrument(tracer_provider=provider)

    with fake_openai() as base_url:
        model = ChatOpenAI(model=MODEL_NAME, base_url=base_url, api_key="sk-offline", max_retries=0)
        agent = create_agent(
            model, tools=[tool(fn) for fn in TOOLS], system_prompt=INSTRUCTIONS, name=AGENT_NAME
        )
        agent.invoke({"messages": [{"role": "user", "content": USER_MESSAGE}]})
    provider.shutdown()  # grades what is still buffered
    print_verdicts(verdicts)
    return verdicts


if __name__ == "__main__":
    main()
