"""Latency statistics: the median's distribution-free interval and the suite's geometric means."""

from __future__ import annotations

import math

import pytest

from harness.stats import latency_of, median_interval, suite_latency


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
