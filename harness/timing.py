"""The judge's clock for the reference, and the L2 flush both sides use on a GPU.

The reference runs in the judge's process, so its times are the judge's own:
on the CPU perf_counter_ns around the call; on a GPU a buffer twice the size
of the L2 cache written first (so no call finds its data left in L2 by the one
before), CUDA events around the call, and a synchronisation to read them. The
kernel's process times the solution the same way (harness.kernel), and the
judge holds those times against what it measures itself (harness.case).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

_flush_buffers: dict[torch.device, torch.Tensor] = {}


def warm(arguments: Sequence[Any]) -> None:
    """On the CPU, read every byte of a call's tensors just before it: the kernel's inputs were written by the
    judge's process, perhaps on another core, the reference's by itself, and the one must not find its data
    farther away than the other. (Without this the reference as its own solution measured 0.55x itself.)"""
    for value in arguments:
        if isinstance(value, torch.Tensor) and value.device.type == "cpu" and value.numel():
            value.detach().reshape(-1).view(torch.uint8).sum()


def time_reference(function: Callable[..., Any], arguments: Sequence[Any], device: str) -> float:
    """Nanoseconds of one call."""
    if not device.startswith("cuda"):
        warm(arguments)
        start = time.perf_counter_ns()
        function(*arguments)
        return float(time.perf_counter_ns() - start)
    target = torch.device(device)
    if target not in _flush_buffers:
        _flush_buffers[target] = l2_flush_buffer(target)
    _flush_buffers[target].zero_()
    begin = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    begin.record()
    function(*arguments)
    end.record()
    torch.cuda.synchronize(target)
    # elapsed_time is in milliseconds.
    return float(begin.elapsed_time(end)) * 1e6


def l2_flush_buffer(device: torch.device) -> torch.Tensor:
    l2_bytes = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)) or 64 * 2**20
    return torch.empty(2 * l2_bytes // 4, dtype=torch.int32, device=device)
