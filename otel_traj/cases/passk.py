"""pass@k and pass^k over repeated runs of one case.

Agents are not deterministic, so a case is often run k times. Two questions differ:

- pass@k: did *at least one* of k runs pass? (capability: can the agent do it at all)
- pass^k: did *all* k runs pass? (reliability: can users count on it)

With exactly k observed runs both are plain booleans. To estimate them for a k smaller than the n runs
observed (c of which passed), the unbiased estimators draw k runs without replacement from the n:

- pass@k = 1 - C(n - c, k) / C(n, k)   (Chen et al., "Evaluating Large Language Models Trained on
  Code", 2021: the chance that a random k-subset holds at least one passing run)
- pass^k = C(c, k) / C(n, k)           (Yao et al., "tau-bench", 2024: the chance that a random
  k-subset holds only passing runs)
"""

from __future__ import annotations

from math import comb


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"passes c={c} must be between 0 and runs n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must be between 1 and runs n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass@k from n runs with c passes: ``1 - C(n-c, k) / C(n, k)``."""
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass^k from n runs with c passes: ``C(c, k) / C(n, k)``."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)
