"""A call's GPU time as SOL-ExecBench measures it by default: CUPTI's records of every kernel, copy and set
the call launched, on any stream, from the first one's start to the last one's end.

SOL-ExecBench (src/sol_execbench/core/bench/timing.py, `bench_gpu_time_with_cupti`; its changelog puts CUDA
events' own overhead at 6-10 µs for kernels under 50 µs): the runtime and driver API records carry the CPU
time of each launch and a correlation id; the GPU activity records carry the same id with their GPU start and
end. A call's launches are those whose CPU start falls inside the call's window; its time is the span of
their GPU activities. This module's code is our own.

Used by the kernel's process on CUDA when NVIDIA's `cupti-python` imports and starts; otherwise CUDA events
time the call (the result names the timer). The span computation is plain Python, tested without a GPU; the
CUPTI calls have not run on a GPU host yet (harness/README.md).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Bytes of each buffer CUPTI fills with activity records.
_BUFFER_BYTES = 8 * 2**20


@dataclass(frozen=True)
class Launch:
    cpu_start: int
    correlation_id: int


@dataclass(frozen=True)
class Activity:
    correlation_id: int
    start: int
    end: int


def call_spans(
    windows: Sequence[tuple[int, int]], launches: Sequence[Launch], activities: Sequence[Activity]
) -> list[float | None]:
    """Per call window (CPU timestamps, ns), the span of the GPU activities launched in it; None for none."""
    ordered = sorted(launches, key=lambda launch: launch.cpu_start)
    starts = [launch.cpu_start for launch in ordered]
    by_correlation: dict[int, list[Activity]] = {}
    for activity in activities:
        by_correlation.setdefault(activity.correlation_id, []).append(activity)
    spans: list[float | None] = []
    for begin, end in windows:
        inside = ordered[bisect.bisect_left(starts, begin) : bisect.bisect_right(starts, end)]
        found = [a for launch in inside for a in by_correlation.get(launch.correlation_id, [])]
        spans.append(float(max(a.end for a in found) - min(a.start for a in found)) if found else None)
    return spans


@dataclass
class CuptiTimer:
    """CUPTI activity tracing around a block of calls: `begin`/`end` each call, then `spans` for the block."""

    cupti: Any
    kinds: tuple[Any, ...]
    windows: list[tuple[int, int]] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    activities: list[Activity] = field(default_factory=list)
    _open: int = 0

    @classmethod
    def start(cls) -> CuptiTimer | None:
        """A running timer, or None where cupti-python is not installed or CUPTI does not start."""
        try:
            from cupti import cupti

            kind = cupti.ActivityKind
            kinds = (kind.RUNTIME, kind.DRIVER, kind.CONCURRENT_KERNEL, kind.MEMCPY, kind.MEMSET)
            timer = cls(cupti=cupti, kinds=kinds)
            for each in kinds:
                cupti.activity_enable(each)
            cupti.activity_register_callbacks(lambda: (_BUFFER_BYTES, 0), timer._take)
            return timer
        except Exception:
            return None

    def _take(self, records: list[Any]) -> None:
        kind = self.cupti.ActivityKind
        for record in records:
            if record.kind in (kind.CONCURRENT_KERNEL, kind.MEMCPY, kind.MEMSET):
                self.activities.append(Activity(record.correlation_id, record.start, record.end))
            elif record.kind in (kind.RUNTIME, kind.DRIVER):
                self.launches.append(Launch(record.start, record.correlation_id))

    def begin(self) -> None:
        self._open = self.cupti.get_timestamp()

    def end(self) -> None:
        self.windows.append((self._open, self.cupti.get_timestamp()))

    def spans(self) -> list[float | None]:
        """The block's per-call spans, in order; the records are cleared for the next block."""
        self.cupti.activity_flush_all(0)
        spans = call_spans(self.windows, self.launches, self.activities)
        self.windows, self.launches, self.activities = [], [], []
        return spans
