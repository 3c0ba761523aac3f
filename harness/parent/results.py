"""The evaluation result: what `python -m harness run` prints and `harness.evaluate` returns."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.wire.timing_names import Timer

# SOL-ExecBench's status names, plus OUT_OF_MEMORY, NOT_RUN for the cases after one that stopped the run,
# and HARNESS_ERROR.
Status = Literal[
    "PASSED",
    "INCORRECT_SHAPE",
    "INCORRECT_NUMERICAL",
    "INCORRECT_DTYPE",
    "RUNTIME_ERROR",
    "COMPILE_ERROR",
    "TIMEOUT",
    "REWARD_HACK",
    "INVALID_REFERENCE",
    "OUT_OF_MEMORY",
    "NOT_RUN",
    # The evaluation's own failure, not the kernel's: a rerun that ends so decides nothing.
    "HARNESS_ERROR",
]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Latency(_Closed):
    median_ns: float
    mean_ns: float
    min_ns: float
    max_ns: float
    stdev_ns: float
    ci95_ns: tuple[float, float]
    n: int


class Speedup(_Closed):
    """The reference's latency over the solution's: per case, the median of the ratios of pairs of requests
    (one to each side, on the same inputs, in a random order); for a suite, the geometric mean of the cases'."""

    median: float
    # The median's distribution-free 95 % interval (sign test on the pairs' ratios).
    ci95: tuple[float, float]


class CaseResult(_Closed):
    uuid: str
    status: Status
    reason: str | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    latency: Latency | None = None
    reference_latency: Latency | None = None
    speedup: Speedup | None = None
    # The pairs of requests the case was timed in, until its speedup settled or its time budget ended, and the
    # calls in each request (latency and speedup are per call: a request's figure over its calls).
    pairs: int | None = None
    calls_per_request: int | None = None
    # The share of the host's CPU time that work other than the evaluation's used while the pairs ran
    # (harness.judge.host), between 0 and 1; None where the host does not show it.
    host_busy: float | None = Field(default=None, ge=0, le=1)


class Protocol(_Closed):
    # The protocol the evaluation followed (harness.judge.protocols): a source's evaluator, or KernelIndex's own.
    # `timer`: what decided the figures (harness.wire.timing_names); `precision` and `case_budget_s`: when the pairs
    # stopped (the interval within that fraction of the median, or that many seconds of pairs per case).
    name: str = "kernelindex"
    version: str = "1"
    warmup: int
    iterations: int
    correctness_rounds: int = 1
    timer: Timer
    l2_flush: str
    statistic: Literal["median", "mean"] = "median"
    precision: float | None = None
    case_budget_s: float | None = None


class Limits(_Closed):
    """What held the solution's process, named so that a reader knows what was enforced."""

    memory_mb: int | None = None
    memory: str = "none"  # "cgroup", "rss watchdog"
    pids: int | None = None
    scratch_mb: int | None = None
    cpus: int | None = None
    seccomp: bool = False
    # What the judge measured each request by (harness.jail.sandbox clock_check): on the CPU its latency (the
    # group's CPU time or the wall clock less the serving thread's run-queue wait, the larger), or the group's CPU
    # time alone where the host keeps no run-queue statistics (and before harness 0.3.0); on CUDA its own wall
    # clock; the group frozen between requests; "none" without a cgroup (the kernel could not be frozen while the
    # reference was timed, so the figures decide nothing).
    clock_check: str = "none"


class HarnessInfo(_Closed):
    name: str
    version: str
    digest: str


class EvaluationResult(_Closed):
    status: Status
    reason: str | None = None
    definition: str
    solution: str
    device: str
    cases: list[CaseResult]
    # Over all cases, only when every case passed (a suite figure over some cases would not compare).
    latency: Latency | None = None
    reference_latency: Latency | None = None
    speedup: Speedup | None = None
    # The busiest case's host_busy, only when every case passed and each has one.
    host_busy: float | None = Field(default=None, ge=0, le=1)
    protocol: Protocol
    limits: Limits = Limits()
    environment: dict[str, Any]
    harness: HarnessInfo
    log_tail: str = ""
