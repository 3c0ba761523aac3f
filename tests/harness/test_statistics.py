"""Latency statistics: the median's distribution-free interval and the suite's geometric means."""

from __future__ import annotations

import math

import pytest

from harness.judge.case import WALL_OWN_UNCERTAINTY, ratio_bounds
from harness.parent.stats import latency_of, median_interval, ratio_speedup, settled, suite_latency, suite_speedup


def test_one_cases_statistics() -> None:
    latency = latency_of([5.0, 1.0, 3.0, 2.0, 4.0])

    assert (latency.median_ns, latency.mean_ns, latency.min_ns, latency.max_ns, latency.n) == (3.0, 3.0, 1.0, 5.0, 5)
    assert latency.stdev_ns == pytest.approx(math.sqrt(2.5))
    # Five samples are too few for a 95 % interval of the median narrower than the range.
    assert latency.ci95_ns == (1.0, 5.0)


def test_the_median_interval_of_50_samples_is_the_18th_and_33rd() -> None:
    # P(Binomial(50, 1/2) <= 17) = 0.0164 <= 0.025 < P(<= 18) = 0.0325.
    samples = [float(rank) for rank in range(1, 51)]

    assert median_interval(samples) == (18.0, 33.0)


def test_the_suite_is_the_geometric_mean_of_its_cases() -> None:
    suite = suite_latency([latency_of([100.0] * 10), latency_of([400.0] * 30)])

    assert suite is not None
    assert suite.median_ns == pytest.approx(200.0)
    assert suite.ci95_ns == pytest.approx((200.0, 200.0))
    assert suite.n == 40
    assert suite_latency([]) is None


def test_a_cases_speedup_is_the_median_of_its_pairs_ratios_with_a_sign_test_interval() -> None:
    ratios = [1.0 + rank / 100 for rank in range(50)]  # 1.00, 1.01, ... 1.49, shuffled below
    speedup = ratio_speedup(ratios[::2] + ratios[1::2])

    assert speedup.median == pytest.approx(1.245)
    # The 18th and 33rd of 50 sorted ratios, as for a latency's median.
    assert speedup.ci95 == pytest.approx((1.17, 1.32))


def test_pairs_are_settled_once_the_interval_is_within_the_precision_either_way() -> None:
    steady = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99]
    assert settled(steady, 0.05)
    assert not settled([*steady[:-2], 0.5, 1.6], 0.05)  # with 8 pairs the interval is their whole range
    assert not settled(steady, 0.01)
    # Without a precision the iterations asked for decide alone.
    assert settled([0.1, 10.0], None)


def test_the_suite_speedup_is_the_geometric_mean_of_each_bound() -> None:
    suite = suite_speedup([ratio_speedup([2.0] * 6), ratio_speedup([8.0] * 6)])

    assert suite is not None
    assert suite.median == pytest.approx(4.0)
    assert suite.ci95 == pytest.approx((4.0, 4.0))
    assert suite_speedup([]) is None


def test_a_pair_timed_mostly_in_the_harnesss_own_cost_is_bounded_widely_either_way() -> None:
    # As on an H200 host: requests of a few microseconds of GPU work each, milliseconds of round trip, freeze
    # and copies, timed on the judge's wall clock (ns: measured, then the calibrated empty cost).
    low, high = ratio_bounds((1_100_000, 1_000_000), (1_200_000, 1_000_000), WALL_OWN_UNCERTAINTY)
    assert low < 0.2 and high > 5

    # Work twenty times the harness's cost: the bounds stay within a few per cent of the ratio, 2.
    low, high = ratio_bounds((21_000_000, 1_000_000), (41_000_000, 1_000_000), WALL_OWN_UNCERTAINTY)
    assert 1.9 < low < 2.0 < high < 2.1

    # A cgroup's CPU time (no slack): the ratio itself.
    assert ratio_bounds((21_000_000, 1_000_000), (41_000_000, 1_000_000), 0.0) == (2.0, 2.0)


def test_a_speedup_with_bounds_takes_its_interval_from_them() -> None:
    ratios = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99]
    bounds = [[ratio / 10, ratio * 10] for ratio in ratios]

    speedup = ratio_speedup(ratios, bounds)

    assert speedup.median == ratio_speedup(ratios).median == 1.0
    assert speedup.ci95 == (pytest.approx(0.098), pytest.approx(10.2))
    with pytest.raises(ValueError, match="must hold its ratio"):
        ratio_speedup(ratios, [[1.5, 2.0]] * len(ratios))
    with pytest.raises(ValueError, match="must hold its ratio"):
        ratio_speedup(ratios, bounds[:-1])
