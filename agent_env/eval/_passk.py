"""pass@k, the unbiased estimator of Chen et al. 2021: 1 - C(n-c, k) / C(n, k)."""

from __future__ import annotations

from math import comb

from agent_env._errors import ArgumentError


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of `k` samples drawn from `n`, `c` of which pass, passes."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ArgumentError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)
