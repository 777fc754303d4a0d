"""Which tool calls of a run have an order among themselves, and which pairs keep the expected order.

Two calls have no order of their own when neither can have waited for the other's result: the model
requested both in one turn (``ToolCall.turn``, as agentevals treats one message's tool
calls), or, when a call's turn is unknown, their spans overlapped in time (whether or not the builder
marked them ``parallel``, which needs sibling spans). Such calls form one unordered group; groups are
ordered by their first call.
"""

from __future__ import annotations

from collections.abc import Sequence

from otel_traj.steps import ToolCall


def _root(parent: list[int], index: int) -> int:
    while parent[index] != index:
        parent[index] = parent[parent[index]]
        index = parent[index]
    return index


def _join(parent: list[int], a: int, b: int) -> None:
    ra, rb = _root(parent, a), _root(parent, b)
    if ra != rb:
        # The earlier call stays the root, so a group's id is its first call.
        parent[max(ra, rb)] = min(ra, rb)


def unordered_groups(calls: Sequence[ToolCall]) -> list[int]:
    """For each call (in trajectory order), the index of the first call of its unordered group."""
    parent = list(range(len(calls)))
    first_of_turn: dict[int, int] = {}
    for index, call in enumerate(calls):
        if call.turn is not None:
            _join(parent, first_of_turn.setdefault(call.turn, index), index)
    # Calls of two known turns are ordered by their turns even if a slow call outlived its turn.
    by_start = sorted(range(len(calls)), key=lambda i: calls[i].start_ns)
    running: list[int] = []
    for index in by_start:
        call = calls[index]
        running = [r for r in running if calls[r].end_ns > call.start_ns]
        for other in running:
            if call.turn is None or calls[other].turn is None:
                _join(parent, other, index)
        running.append(index)
    return [_root(parent, index) for index in range(len(calls))]


def longest_in_order(groups: Sequence[int], actual: Sequence[int]) -> list[int]:
    """The positions of the longest run of pairs that keeps the expected order.

    ``groups[k]`` is the unordered group of the actual call paired with the k-th expected call (pairs
    listed in expected order), ``actual[k]`` that call's index. Pairs keep the order when their
    groups never go back (calls of one group may come in any order). Among the longest such runs the
    one keeping the earliest actual calls wins, so the later call of a swapped pair is the one reported.
    """
    count = len(groups)
    # best[k]: (length, -sum of actual indices) of the best run ending at pair k; previous[k] its link.
    best: list[tuple[int, int]] = []
    previous: list[int] = []
    for k in range(count):
        score, link = (1, -actual[k]), -1
        for j in range(k):
            if groups[j] <= groups[k]:
                candidate = (best[j][0] + 1, best[j][1] - actual[k])
                if candidate > score:
                    score, link = candidate, j
        best.append(score)
        previous.append(link)
    if not best:
        return []
    k = max(range(count), key=lambda i: best[i])
    kept: list[int] = []
    while k != -1:
        kept.append(k)
        k = previous[k]
    return kept[::-1]
