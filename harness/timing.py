"""Timing one callable: warm-up, then timed iterations, each timed on its own.

On a GPU every iteration (warm-up included) starts by writing a buffer twice
the size of the L2 cache, so no iteration finds its data left in L2 by the one
before; CUDA events bracket the call alone, and one synchronisation at the end
collects them. On the CPU, perf_counter_ns brackets each call. The reference
and the solution go through the same function.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch


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
    clock = time.perf_counter_ns
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
    torch.cuda.synchronize(device)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]  # type: ignore[no-untyped-call]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]  # type: ignore[no-untyped-call]
    for start, end in zip(starts, ends, strict=True):
        flush.zero_()
        start.record()
        function(*arguments)
        end.record()
    torch.cuda.synchronize(device)
    # elapsed_time is in milliseconds.
    return [start.elapsed_time(end) * 1e6 for start, end in zip(starts, ends, strict=True)]


def l2_flush_buffer(device: torch.device) -> torch.Tensor:
    l2_bytes = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)) or 64 * 2**20
    return torch.empty(2 * l2_bytes // 4, dtype=torch.int32, device=device)
