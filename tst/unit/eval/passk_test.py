"""pass@k is Chen et al.'s unbiased estimator: 1 - C(n-c, k) / C(n, k)."""

from __future__ import annotations

import pytest

from agent_env.eval import pass_at_k

pytestmark = pytest.mark.needs("eval_installed")


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (4, 0, 1, 0.0),
        (4, 1, 1, 0.25),
        (4, 1, 4, 1.0),
        (4, 2, 2, 1 - 1 / 6),
        (5, 5, 3, 1.0),
        (10, 3, 5, 1 - 21 / 252),
    ],
)
def test_pass_at_k_is_one_minus_the_chance_that_k_samples_drawn_from_n_all_fail(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_refuses_counts_that_cannot_be():
    with pytest.raises(ValueError, match="0 <= c <= n and 1 <= k <= n"):
        pass_at_k(2, 3, 1)
