"""Cost in US dollars of each model call and of a run, from pydantic's ``genai-prices`` database.

Prices come from the package's snapshot, never from a table of ours; cached and reasoning tokens
are priced as the database prices them for the model. The database is looked up with the call's
provider when the trace names one (``gen_ai.provider.name``: ``openai``, ``gcp.gemini``,
``azure.ai.openai`` are all known to it), else by the model name alone; a model recorded with a
provider prefix (``openai/gpt-4o-mini``) is also tried as that provider's model. Prices are those in
force when the call started.

A cost that cannot be computed is ``None`` with the reason, never 0: an unknown model, a call that
recorded no tokens. A run's total is ``None`` as soon as one of its model calls has no cost, so a
partial sum is never presented as the total.

A run is priced when its cost is first read (the budget check with ``max_cost_usd``, the sinks, the
JSON and HTML reports), so ``otel-traj grade`` with a table skips the database altogether.
``genai_prices`` is imported then (about 0.15 s, on the worker thread in-process), never at
``import otel_traj`` nor on the application's span hot path.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from otel_traj.steps import ModelCall, span_hex

if TYPE_CHECKING:
    from otel_traj.trajectory import Trajectory


@dataclass(slots=True, frozen=True)
class CallCost:
    """One model call's cost: ``usd``, or ``None`` with ``reason``."""

    usd: float | None
    reason: str | None = None


@dataclass(slots=True, frozen=True)
class RunCost:
    """A run's cost: ``calls`` aligned with ``Trajectory.model_calls``; ``total_usd`` the sum, or
    ``None`` with ``reason`` when any call's cost is unknown."""

    calls: tuple[CallCost, ...]
    total_usd: float | None
    reason: str | None = None


def _candidates(model: str, provider: str | None) -> list[tuple[str, str | None]]:
    """(model, provider) pairs to look up, best first."""
    found: list[tuple[str, str | None]] = [(model, provider)]
    if provider is not None:
        found.append((model, None))
    prefix, slash, rest = model.partition("/")
    if slash and prefix and rest:
        found.append((rest, prefix))
    return list(dict.fromkeys(found))


def price_call(call: ModelCall) -> CallCost:
    """The cost of one model call (see the module's docstring)."""
    if not call.has_usage:
        return CallCost(None, "tokens not recorded")
    if not call.model:
        return CallCost(None, "model not recorded")
    when = datetime.fromtimestamp(call.start_ns / 1e9, UTC) if call.start_ns > 0 else datetime.now(UTC)
    counts = (
        call.input_tokens,
        call.output_tokens,
        call.cache_read_tokens,
        call.cache_write_tokens,
        call.reasoning_tokens,
    )
    problem = ""
    for model, provider in _candidates(call.model, call.provider):
        try:
            price = _price(counts, model, provider, when)
        except LookupError as exc:
            problem = problem or str(exc)
            continue
        except (ValueError, ArithmeticError) as exc:
            return CallCost(None, f"cannot price {call.model}: {exc}")
        return CallCost(float(price))
    where = f" (provider {call.provider})" if call.provider else ""
    return CallCost(None, f"model {call.model}{where} not in the price database: {problem}")


# Prices already computed, by the database's price entry in force and the token counts: the
# package's calculation costs about 75 µs a call, and runs of one agent repeat their counts (the same
# system prompt and tools). Bounded; the oldest entries go first.
_COMPUTED: dict[tuple[Any, ...], Decimal] = {}
MAX_COMPUTED = 4096


def _price(counts: tuple[int | None, ...], model: str, provider: str | None, when: datetime) -> Decimal:
    """The total price of the token ``counts`` (input, output, cache read, cache write, reasoning):
    the package's own calculation, computed once per price entry and counts."""
    found_provider, found_model = _lookup(model, provider)
    key = (found_provider.id, found_model.id, id(found_model.get_prices(when)), counts)
    price = _COMPUTED.get(key)
    if price is None:
        from genai_prices import Usage, calc_price

        input_tokens, output_tokens, cache_read, cache_write, reasoning = counts
        usage = Usage(
            input_tokens=input_tokens or 0,
            output_tokens=output_tokens or 0,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            output_reasoning_tokens=reasoning,
        )
        calculated = calc_price(usage, model, provider_id=provider, genai_request_timestamp=when)
        price = _COMPUTED[key] = Decimal(calculated.total_price)
        if len(_COMPUTED) > MAX_COMPUTED:
            del _COMPUTED[next(iter(_COMPUTED))]
    return price


# The database's entry for a (model, provider) pair, or why there is none: the package remembers what
# it found but searches every model again, slowly, for a pair it does not know.
_FOUND: dict[tuple[int, str, str | None], tuple[Any, Any] | str] = {}


def _lookup(model: str, provider: str | None) -> tuple[Any, Any]:
    from genai_prices import data_snapshot

    snapshot = data_snapshot.get_snapshot()
    key = (id(snapshot), model, provider)
    found = _FOUND.get(key)
    if found is None:
        try:
            found = snapshot.find_provider_model(model, None, provider, None)
        except LookupError as exc:
            found = str(exc)
        _FOUND[key] = found
        if len(_FOUND) > MAX_COMPUTED:
            del _FOUND[next(iter(_FOUND))]
    if isinstance(found, str):
        raise LookupError(found)
    return found


def price_run(trajectory: Trajectory) -> RunCost:
    """The run's cost (see :class:`RunCost`); a run without model calls costs 0 unless an agent span
    recorded tokens that no model call accounts for."""
    calls = tuple(price_call(call) for call in trajectory.model_calls)
    if not calls and trajectory.tokens.total > 0:
        return RunCost(calls, None, "tokens recorded on the agent span only, no model call to price")
    unknown = [
        (call, cost) for call, cost in zip(trajectory.model_calls, calls, strict=True) if cost.usd is None
    ]
    if unknown:
        call, cost = unknown[0]
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        reason = f"model call {span_hex(call.span_id)}: {cost.reason}{more}"
        return RunCost(calls, None, reason)
    return RunCost(calls, sum(c.usd or 0.0 for c in calls))


def run_cost(trajectory: Trajectory) -> RunCost:
    """The run's cost, computed once and kept on the (frozen) trajectory: a memo of its steps' price."""
    cost = trajectory.cost
    if cost is None:
        cost = price_run(trajectory)
        object.__setattr__(trajectory, "cost", cost)
    return cost
