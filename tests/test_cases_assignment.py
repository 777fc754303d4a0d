"""The optimal assignment against brute force over every possible assignment."""

from __future__ import annotations

import itertools
import random

import pytest

from otel_traj.cases.assignment import max_weight_assignment, min_cost_assignment


def _brute_force_min(cost: list[list[float]]) -> float:
    rows, cols = len(cost), len(cost[0])
    if rows <= cols:
        return min(
            sum(cost[r][c] for r, c in enumerate(p)) for p in itertools.permutations(range(cols), rows)
        )
    return min(sum(cost[r][c] for c, r in enumerate(p)) for p in itertools.permutations(range(rows), cols))


@pytest.mark.parametrize("seed", range(60))
def test_matches_brute_force_on_random_rectangular_matrices(seed: int) -> None:
    rng = random.Random(seed)
    rows, cols = rng.randint(1, 6), rng.randint(1, 6)
    cost = [[rng.choice([0.0, 0.5, 1.0, rng.uniform(-3, 3)]) for _ in range(cols)] for _ in range(rows)]
    pairs = min_cost_assignment(cost)
    assert len(pairs) == min(rows, cols)
    assert len({r for r, _ in pairs}) == len(pairs) == len({c for _, c in pairs})
    assert sum(cost[r][c] for r, c in pairs) == pytest.approx(_brute_force_min(cost))


def test_max_weight_prefers_the_global_optimum_over_the_first_choice() -> None:
    # Row 0 alone would take column 0 (weight 3), but then row 1 gets only 0: optimum is 2 + 2.
    weight = [[3.0, 2.0], [2.0, 0.0]]
    assert max_weight_assignment(weight) == [(0, 1), (1, 0)]


def test_empty() -> None:
    assert min_cost_assignment([]) == []
    assert min_cost_assignment([[]]) == []
