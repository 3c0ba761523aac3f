"""Timing one callable: warm-up, then timed iterations, each timed on its own.

On a GPU every iteration (warm-up included) starts by writing a buffer twice
the size of the L2 cache, so no iteration finds its data left in L2 by the one
before; CUDA events bracket the call alone, and one synchronisation at the end
collects them. On the CPU, perf_counter_ns brackets each call. The reference
and the solution go through the same function.

The clocks are taken when this module is imported, before any solution is
loaded: a solution that replaces them afterwards does not change the timing,
and `timer_tampering` names what it replaced, which is a REWARD_HACK.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

_PERF_COUNTER_NS = time.perf_counter_ns
_EVENT_RECORD = torch.cuda.Event.record
_ELAPSED_TIME = torch.cuda.Event.elapsed_time
_SYNCHRONIZE = torch.cuda.synchronize


def timer_tampering() -> str | None:
    """What the solution replaced of the clocks the harness times with, or None."""
    replaced = [
        name
        for name, current, original in (
            ("time.perf_counter_ns", time.perf_counter_ns, _PERF_COUNTER_NS),
            ("torch.cuda.Event.record", torch.cuda.Event.record, _EVENT_RECORD),
            ("torch.cuda.Event.elapsed_time", torch.cuda.Event.elapsed_time, _ELAPSED_TIME),
            ("torch.cuda.synchronize", torch.cuda.synchronize, _SYNCHRONIZE),
        )
        if current is not original
    ]
    return ", ".join(replaced) or None


def time_calls(
    function: Callable[..., Any], arguments: Sequence[Any], device: str, warmup: int, iterations: int
) -> list[float]:
    """Nanoseconds per call, one sample per timed iteration."""
    if device.startswith("cuda"):
        return _time_cuda(function, arguments, torch.device(device), warmup, iterations)
    return _time_cpu(function, arguments, warmup, iterations)


def _time_cpu(function: Callable[..., Any], arguments: Sequence[Any], warmup: int, iterations: int) -> list[float]:
    for _ in range(warmup):
        function(*arguments)
    clock = _PERF_COUNTER_NS
    samples = []
    for _ in range(iterations):
        start = clock()
        function(*arguments)
        samples.append(float(clock() - start))
    return samples


def _time_cuda(
    function: Callable[..., Any], arguments: Sequence[Any], device: torch.device, warmup: int, iterations: int
) -> list[float]:
    flush = l2_flush_buffer(device)
    for _ in range(warmup):
        flush.zero_()
        function(*arguments)
    _SYNCHRONIZE(device)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]  # type: ignore[no-untyped-call]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]  # type: ignore[no-untyped-call]
    for start, end in zip(starts, ends, strict=True):
        flush.zero_()
        _EVENT_RECORD(start)
        function(*arguments)
        _EVENT_RECORD(end)
    _SYNCHRONIZE(device)
    # elapsed_time is in milliseconds.
    return [_ELAPSED_TIME(start, end) * 1e6 for start, end in zip(starts, ends, strict=True)]


def l2_flush_buffer(device: torch.device) -> torch.Tensor:
    l2_bytes = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)) or 64 * 2**20
    return torch.empty(2 * l2_bytes // 4, dtype=torch.int32, device=device)
