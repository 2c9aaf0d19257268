"""The confidence interval the streaming benchmark prints for its median CPU ratios."""

from __future__ import annotations

import random

import pytest

from benchmarks.streaming import median_interval


def test_the_interval_is_the_order_statistics_the_binomial_gives() -> None:
    # n = 15: (x_(4), x_(12)) covers 96.5 %, (x_(5), x_(11)) only 88.2 %
    assert median_interval([float(x) for x in range(15, 0, -1)]) == (4.0, 12.0)
    # n = 45: (x_(17), x_(29)) covers 92.8 %, (x_(18), x_(28)) 86.5 %
    assert median_interval([float(x) for x in range(1, 46)]) == (17.0, 29.0)
    # too few values for anything narrower than the whole range
    assert median_interval([2.0, 1.0, 3.0]) == (1.0, 3.0)
    assert median_interval([5.0]) == (5.0, 5.0)


def test_the_interval_covers_a_known_median_at_least_as_often_as_it_says() -> None:
    rng = random.Random(7)
    trials = 3000
    for n in (8, 15, 30):
        hits = 0
        for _ in range(trials):
            lo, hi = median_interval([rng.lognormvariate(0.0, 0.5) for _ in range(n)])  # median 1.0
            hits += lo <= 1.0 <= hi
        # at least 90 %, less 4.5 standard errors of 3000 trials (0.025): the
        # middle half (x_(n/4), x_(3n/4)) would cover about 50-80 %
        assert 0.875 <= hits / trials < 0.999, (n, hits / trials)


def test_no_values_is_an_error() -> None:
    with pytest.raises(ValueError):
        median_interval([])
