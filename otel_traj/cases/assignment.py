"""Optimal assignment (Hungarian algorithm, shortest augmenting paths with potentials, O(n^2 m)).

Matching expected tool calls to actual ones first-fit gives false negatives: an early expected call can
take the actual call that a later one needed. The optimal assignment never does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def min_cost_assignment(cost: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """Assign rows to columns at minimum total cost; returns sorted ``(row, column)`` pairs.

    Every row is assigned when rows <= columns, every column otherwise. The matrix must be
    rectangular with finite entries.
    """
    rows = len(cost)
    if rows == 0 or len(cost[0]) == 0:
        return []
    cols = len(cost[0])
    if rows > cols:
        transposed = [[cost[r][c] for r in range(rows)] for c in range(cols)]
        return sorted((r, c) for c, r in min_cost_assignment(transposed))
    # 1-based arrays as in the classic formulation: index 0 is the virtual start column.
    u = [0.0] * (rows + 1)
    v = [0.0] * (cols + 1)
    owner = [0] * (cols + 1)
    way = [0] * (cols + 1)
    for row in range(1, rows + 1):
        owner[0] = row
        col0 = 0
        minv = [math.inf] * (cols + 1)
        used = [False] * (cols + 1)
        while True:
            used[col0] = True
            r0 = owner[col0]
            delta = math.inf
            col1 = 0
            for col in range(1, cols + 1):
                if used[col]:
                    continue
                reduced = cost[r0 - 1][col - 1] - u[r0] - v[col]
                if reduced < minv[col]:
                    minv[col] = reduced
                    way[col] = col0
                if minv[col] < delta:
                    delta = minv[col]
                    col1 = col
            for col in range(cols + 1):
                if used[col]:
                    u[owner[col]] += delta
                    v[col] -= delta
                else:
                    minv[col] -= delta
            col0 = col1
            if owner[col0] == 0:
                break
        while col0:
            col1 = way[col0]
            owner[col0] = owner[col1]
            col0 = col1
    return sorted((owner[col] - 1, col - 1) for col in range(1, cols + 1) if owner[col])


def max_weight_assignment(weight: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """The assignment of maximum total weight (same cardinality rules as ``min_cost_assignment``)."""
    return min_cost_assignment([[-w for w in row] for row in weight])
