"""The evaluation result: what `python -m harness run` prints and `harness.evaluate` returns."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

# SOL-ExecBench's status names, plus OUT_OF_MEMORY, and NOT_RUN for the cases after one that stopped the run.
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


class CaseResult(_Closed):
    uuid: str
    status: Status
    reason: str | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    latency: Latency | None = None
    reference_latency: Latency | None = None


class Protocol(_Closed):
    warmup: int
    iterations: int
    timer: Literal["perf_counter_ns", "cuda_event"]
    l2_flush: str
    statistic: Literal["median"] = "median"


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
    protocol: Protocol
    environment: dict[str, Any]
    harness: HarnessInfo
    log_tail: str = ""
