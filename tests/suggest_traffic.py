"""Generated traffic for ``policy suggest``: a few hundred runs of a billing agent with known shapes.

Every run serves customer ``C<n>`` (span attribute ``app.customer_id``). Model turn 0 requests
``get_customer`` and ``get_weather`` together (parallel: no order between them); later turns page
through ``search_orders``, poll ``poll_status`` with the same job id in most runs, and the last turn
sends ``send_email``, always after ``get_customer`` succeeded. ``account_ref`` equals the customer
in 90 % of the calls carrying it (below the 95 % a scoped argument needs); ``status`` is in some
``search_orders`` calls only (not required). About one run in ten fails a tool call and runs far
longer: failed runs must not move the budgets.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

from otel_traj.steps import ModelCall, ToolCall
from otel_traj.trajectory import Tokens, Trajectory

MS = 1_000_000


def _run(rng: random.Random, index: int, agent: str, failed: bool) -> Trajectory:
    customer = f"C{rng.randint(100, 999)}"
    start = 10_000 * MS * (index + 1)
    clock = start
    calls: list[ToolCall] = []

    def tool(name: str, turn: int, arguments: dict[str, Any], ok: bool = True) -> None:
        nonlocal clock
        clock += rng.randint(5, 40) * MS
        span = 0x10_000 * (index + 1) + len(calls)
        calls.append(
            ToolCall(
                name=name,
                span_id=span,
                start_ns=clock,
                end_ns=clock + 10 * MS,
                arguments=arguments,
                result=None if not ok else '{"ok": true}',
                ok=ok,
                error_type=None if ok else "Timeout",
                turn=turn,
            )
        )
        clock += 10 * MS

    tool("get_customer", 0, {"customer_id": customer})
    tool("get_weather", 0, {"city": rng.choice(["Paris", "Lima", "Oslo"])})
    turn = 1
    for page in range(rng.randint(1, 5) if not failed else 20):
        arguments: dict[str, Any] = {"customer_id": customer, "page": page}
        if rng.random() < 0.5:
            arguments["status"] = rng.choice(["open", "paid"])
        if rng.random() < 0.3:
            arguments["account_ref"] = customer if rng.random() < 0.9 else f"C{rng.randint(100, 999)}"
        tool("search_orders", turn, arguments, ok=not (failed and page == 3))
        turn += 1
    if rng.random() < 0.8:
        for _ in range(rng.randint(2, 4)):
            tool("poll_status", turn, {"job_id": f"J{index}"})
            turn += 1
    tool("send_email", turn, {"to": f"{customer}@example.com", "body": "Your orders"})
    models = [
        ModelCall(span_id=0x900_000 * (index + 1) + k, input_tokens=rng.randint(200, 400), output_tokens=20)
        for k in range(turn + 2)
    ]
    end = clock + rng.randint(100, 3000) * MS
    return Trajectory(
        trace_id=index + 1,
        agent=agent,
        service_name="billing",
        tool_calls=calls,
        model_calls=models,
        tokens=Tokens(
            input=sum(m.input_tokens or 0 for m in models), output=sum(m.output_tokens or 0 for m in models)
        ),
        start_ns=start,
        end_ns=end,
        user_input=f"Customer {customer}: where are my orders?",
        final_answer="Here are your orders.",
        attributes={"app.customer_id": customer},
    )


def traffic(runs: int = 300, seed: int = 7, agent: str = "billing_agent") -> list[Trajectory]:
    rng = random.Random(seed)
    return [_run(rng, i, agent, failed=rng.random() < 0.1) for i in range(runs)]


def percentile(values: list[Fraction], p: int) -> Fraction:
    """The oracle: rank ``h = (n - 1) p / 100``, linear between the values around it."""
    ordered = sorted(values)
    h = Fraction(len(ordered) - 1) * p / 100
    low = int(h)
    if low + 1 >= len(ordered):
        return ordered[low]
    return ordered[low] + (h - low) * (ordered[low + 1] - ordered[low])
