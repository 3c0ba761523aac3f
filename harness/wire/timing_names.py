"""The names the result gives the timers and the L2 policy, shared by the parent and the child."""

from __future__ import annotations

from typing import Final, Literal, get_args

# What decided a result's figures: the judge's own measures of each request, the served process's cgroup's CPU
# time (read frozen), the larger of it and the judge's wall clock less the serving thread's run-queue wait (a
# latency, on the CPU where the host keeps run-queue statistics), or the judge's wall clock; older results named
# the kernel's process's clocks (the CPU's, CUDA events, CUPTI's activity records), which now are detail only.
Timer = Literal["judge_latency", "cgroup_cpu_time", "judge_wall_clock", "perf_counter_ns", "cuda_event", "cupti"]
TIMERS: tuple[Timer, ...] = get_args(Timer)
JUDGE_LATENCY: Final[Literal["judge_latency"]] = "judge_latency"
JUDGE_CPU_TIME: Final[Literal["cgroup_cpu_time"]] = "cgroup_cpu_time"
JUDGE_WALL_CLOCK: Final[Literal["judge_wall_clock"]] = "judge_wall_clock"

CPU_TIMER: Final[Literal["perf_counter_ns"]] = "perf_counter_ns"
CUDA_TIMER: Final[Literal["cuda_event"]] = "cuda_event"
CPU_FLUSH = "none (cpu)"
CUDA_FLUSH = "write 2x L2 before each iteration"
