"""A call's GPU time from CUPTI's records: every activity it launched, on any stream, first start to last end."""

from __future__ import annotations

from harness.kernel.gpu_timing import Activity, Launch, call_spans


def test_a_call_spans_every_activity_it_launched_on_any_stream() -> None:
    # Two calls; the first launches a kernel on one stream and a copy on another, overlapping.
    windows = [(100, 200), (300, 400)]
    launches = [Launch(110, 1), Launch(150, 2), Launch(310, 3), Launch(250, 9)]
    activities = [
        Activity(1, 1_000, 1_500),
        Activity(2, 1_200, 2_600),  # the second stream's copy ends last
        Activity(3, 5_000, 5_040),
        Activity(9, 3_000, 4_000),  # launched between the calls: the harness's own flush, in no call
    ]

    assert call_spans(windows, launches, activities) == [1_600.0, 40.0]


def test_a_call_that_launched_nothing_has_no_span() -> None:
    assert call_spans([(0, 10)], [Launch(20, 1)], [Activity(1, 30, 40)]) == [None]
