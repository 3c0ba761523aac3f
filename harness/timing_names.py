"""The names the result gives the timers and the L2 policy, shared by the parent and the child."""

from __future__ import annotations

from typing import Final, Literal, get_args

# The clocks a result may name: the CPU's, CUDA events, CUPTI's activity records.
Timer = Literal["perf_counter_ns", "cuda_event", "cupti"]
TIMERS: tuple[Timer, ...] = get_args(Timer)

CPU_TIMER: Final[Literal["perf_counter_ns"]] = "perf_counter_ns"
CUDA_TIMER: Final[Literal["cuda_event"]] = "cuda_event"
CPU_FLUSH = "none (cpu)"
CUDA_FLUSH = "write 2x L2 before each iteration"
