"""Plain OpenTelemetry: an agent loop instrumented by hand with GenAI spans, graded by otel-traj.

    python -m examples.plain_otel

The spans otel-traj needs (GenAI semantic conventions; see examples/refund_agent/agent.py for a
complete agent with concurrent tool calls and errors):

    invoke_agent <agent>   gen_ai.operation.name=invoke_agent, gen_ai.agent.name,
                           gen_ai.input.messages / gen_ai.output.messages
      chat <model>         gen_ai.operation.name=chat, gen_ai.usage.input_tokens / output_tokens
      execute_tool <name>  gen_ai.operation.name=execute_tool, gen_ai.tool.name,
                           gen_ai.tool.call.arguments / gen_ai.tool.call.result
"""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import TracerProvider

from examples import _scenario as scenario
from otel_traj.processor import TrajectoryProcessor
from otel_traj.verdict import Verdict

TOOL_BY_NAME = {fn.__name__: fn for fn in scenario.TOOLS}


def run_agent(provider: TracerProvider) -> None:
    tracer = provider.get_tracer("support-agent")
    user = [{"role": "user", "parts": [{"type": "text", "content": scenario.USER_MESSAGE}]}]
    with tracer.start_as_current_span(
        f"invoke_agent {scenario.AGENT_NAME}",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": scenario.AGENT_NAME,
            "gen_ai.input.messages": json.dumps(user),
            "app.customer_id": "C023",
        },
    ) as agent_span:
        results = 0
        while True:
            first, turn = scenario.next_turn(results)
            with tracer.start_as_current_span(f"chat {scenario.MODEL_NAME}") as chat:
                chat.set_attributes(
                    {
                        "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": scenario.MODEL_NAME,
                        "gen_ai.usage.input_tokens": 150 + 60 * results,
                        "gen_ai.usage.output_tokens": 25,
                    }
                )
            if isinstance(turn, str):
                answer = [{"role": "assistant", "parts": [{"type": "text", "content": turn}]}]
                agent_span.set_attribute("gen_ai.output.messages", json.dumps(answer))
                return
            for i, (name, args) in enumerate(turn):
                with tracer.start_as_current_span(f"execute_tool {name}") as span:
                    span.set_attributes(
                        {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": name,
                            "gen_ai.tool.call.id": f"call_{first + i + 1}",
                            "gen_ai.tool.call.arguments": json.dumps(args),
                        }
                    )
                    span.set_attribute("gen_ai.tool.call.result", TOOL_BY_NAME[name](**args))
                results += 1


def main() -> list[Verdict]:
    verdicts: list[Verdict] = []
    provider = TracerProvider()
    provider.add_span_processor(TrajectoryProcessor(policy=scenario.POLICY, on_verdict=verdicts.append))

    run_agent(provider)
    provider.shutdown()  # grades what is still buffered
    scenario.print_verdicts(verdicts)
    return verdicts


if __name__ == "__main__":
    main()
