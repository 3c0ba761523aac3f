"""Latency statistics of one case, and of a suite of cases.

The median is the primary statistic. Its 95 % interval is distribution-free:
two order statistics of the sorted samples chosen from the binomial(n, 1/2)
distribution, so it needs no assumption about the shape of the timings (which
are skewed: a sample can only be slowed down, never sped up, by noise).

A case's speedup is the median of the ratios of its timed pairs (the
reference's request over the kernel's, on the same inputs), with the same
order-statistic interval: each pair sees the same host, so a drift of the
host's speed moves both sides of a ratio alike.

A suite statistic is the geometric mean over the cases of the per-case
statistic, as SOL-ExecBench aggregates latency over a definition's workloads;
the suite's interval bounds are the geometric means of the per-case bounds,
and its `n` is the total number of timed samples.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from harness.parent.results import Latency, Speedup

_EXACT_UP_TO = 200
# Timed pairs per case: the pairs the timed iterations make, at least this many (a sign-test interval needs
# six), and at most this many however long the budget.
MIN_PAIRS, MAX_PAIRS = 6, 1000


def latency_of(samples_ns: Sequence[float]) -> Latency:
    ordered = sorted(samples_ns)
    low, high = median_interval(ordered)
    return Latency(
        median_ns=statistics.median(ordered),
        mean_ns=statistics.fmean(ordered),
        min_ns=ordered[0],
        max_ns=ordered[-1],
        stdev_ns=statistics.stdev(ordered) if len(ordered) > 1 else 0.0,
        ci95_ns=(low, high),
        n=len(ordered),
    )


def median_interval(ordered: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The widest-needed pair (x_(k), x_(n-k+1)) that covers the median with at least `confidence`."""
    n = len(ordered)
    if n > _EXACT_UP_TO:
        # The binomial's normal approximation: exact sums of huge binomials cost about n^3.
        k = max(int(n / 2 - 1.959964 * math.sqrt(n) / 2), 1)
        return ordered[k - 1], ordered[n - k]
    tail = (1 - confidence) / 2
    # k: the largest rank with P(Binomial(n, 1/2) < k) <= tail; below 6 samples no pair qualifies.
    cumulative, k = 0.0, 0
    for rank in range(n):
        cumulative += math.comb(n, rank) / 2**n
        if cumulative > tail:
            break
        k = rank + 1
    if k == 0:
        return ordered[0], ordered[-1]
    return ordered[k - 1], ordered[n - k]


def speedup_interval(ratios: Sequence[float]) -> tuple[float, float, float]:
    """(median, low, high): the median of the pairs' ratios and its distribution-free 95 % interval."""
    ordered = sorted(ratios)
    low, high = median_interval(ordered)
    return statistics.median(ordered), low, high


def ratio_speedup(ratios: Sequence[float], bounds: Sequence[Sequence[float]] | None = None) -> Speedup:
    """The median of the pairs' ratios and its interval. With `bounds` (each pair's ratio at the ends of what the
    harness's own cost of its requests may have been: harness.judge.case `WALL_OWN_UNCERTAINTY`), the interval's low
    end is read from the pairs' low bounds and its high end from their high bounds, so it covers that too."""
    median, low, high = speedup_interval(ratios)
    if bounds is not None:
        if len(bounds) != len(ratios) or any(
            not lo <= ratio <= hi for (lo, hi), ratio in zip(bounds, ratios, strict=True)
        ):
            raise ValueError("each pair's bounds must hold its ratio")
        low = median_interval(sorted(lo for lo, _ in bounds))[0]
        high = median_interval(sorted(hi for _, hi in bounds))[1]
    return Speedup(median=median, ci95=(low, high))


def settled(ratios: Sequence[float], precision: float | None) -> bool:
    """Whether the speedup's interval reaches no further from its median than `precision` (a fraction) either
    way; without a precision, the fixed number of pairs decides alone."""
    if precision is None:
        return True
    median, low, high = speedup_interval(ratios)
    return median > 0 and (median - low) <= precision * median and (high - median) <= precision * median


def suite_speedup(cases: Sequence[Speedup]) -> Speedup | None:
    """The geometric mean over cases of each case's speedup and of each bound of its interval."""
    if not cases:
        return None
    return Speedup(
        median=_geometric_mean([case.median for case in cases]),
        ci95=(_geometric_mean([case.ci95[0] for case in cases]), _geometric_mean([case.ci95[1] for case in cases])),
    )


def suite_latency(cases: Sequence[Latency]) -> Latency | None:
    if not cases:
        return None
    return Latency(
        median_ns=_geometric_mean([case.median_ns for case in cases]),
        mean_ns=_geometric_mean([case.mean_ns for case in cases]),
        min_ns=_geometric_mean([case.min_ns for case in cases]),
        max_ns=_geometric_mean([case.max_ns for case in cases]),
        stdev_ns=_geometric_mean([case.stdev_ns for case in cases]),
        ci95_ns=(
            _geometric_mean([case.ci95_ns[0] for case in cases]),
            _geometric_mean([case.ci95_ns[1] for case in cases]),
        ),
        n=sum(case.n for case in cases),
    )


def _geometric_mean(values: Sequence[float]) -> float:
    # A zero (a stdev of identical samples) makes the product zero, as it should, without log(0).
    if any(value <= 0 for value in values):
        return 0.0
    return math.exp(math.fsum(math.log(value) for value in values) / len(values))
