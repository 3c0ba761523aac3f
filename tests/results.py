"""Harness results as `python -m harness run` writes them (harness/parent/results.py), for tests of the rule and the
worker."""

from __future__ import annotations

from typing import Any

from records.rerun import CPU_TIME_CLOCK, LATENCY_CLOCK


def harness_result(
    status: str = "PASSED", median: float = 1000.0, interval: tuple[float, float] = (990, 1010)
) -> dict[str, Any]:
    latency = {
        "median_ns": median,
        "mean_ns": median,
        "min_ns": median * 0.9,
        "max_ns": median * 1.2,
        "stdev_ns": 5.0,
        "ci95_ns": list(interval),
        "n": 50,
    }
    return {
        "status": status,
        "reason": "" if status == "PASSED" else "case 1: max abs error 0.01 at [0, 3]",
        "latency": latency if status == "PASSED" else None,
        "cases": [
            {
                "uuid": "c1",
                "status": status,
                "reason": "" if status == "PASSED" else "case 1: max abs error 0.01 at [0, 3]",
                "max_abs_error": 0.0,
                "max_rel_error": 0.0,
                "latency": latency if status == "PASSED" else None,
            }
        ],
        "environment": {
            "hardware": {"vendor": "intel", "product": "Intel Xeon", "class": "cpu"},
            "libraries": {"torch": "2.13.0"},
        },
        "harness": {"name": "kernelindex-harness", "version": "1.0", "digest": "sha256:" + "a" * 64},
        "protocol": {"warmup": 10, "iterations": 50, "timer": "perf_counter_ns", "l2_flush": "none (cpu)"},
    }


def speedup_result(
    speedups: list[tuple[float, float, float]], pairs: int = 40, host_busy: float | None = None
) -> dict[str, Any]:
    """A passing result whose cases carry the reference timed in pairs: (median, low, high) speedups; with
    `host_busy`, the share of the host's CPU time the judge saw other work use."""
    passed = harness_result()
    if host_busy is not None:
        passed["host_busy"] = host_busy
        passed["limits"] = {"clock_check": CPU_TIME_CLOCK}
    case = passed["cases"][0]
    passed["cases"] = [
        {**case, "uuid": f"c{i}", "speedup": {"median": m, "ci95": [lo, hi]}, "pairs": pairs}
        for i, (m, lo, hi) in enumerate(speedups)
    ]
    return passed


def drifted(spec: dict[str, Any], latency_ns: float, slower: float) -> dict[str, Any]:
    """A quiet rerun's result that measures every speedup a run's spec claims, narrowly, but its latencies `slower`
    times what it reported (`latency_ns`, the suite's): what a shared host's drift between two moments looks like."""
    result = speedup_result(
        [(case["speedup"], case["speedup"] * 0.98, case["speedup"] * 1.02) for case in spec["cases"]]
    )
    result["host_busy"] = 0.02
    result["limits"] = {"clock_check": LATENCY_CLOCK}
    for case, claimed in zip(result["cases"], spec["cases"], strict=True):
        latency = claimed["latencyNs"] * slower
        case.update(
            uuid=claimed["workload"], latency={"median_ns": latency, "ci95_ns": [latency * 0.98, latency * 1.02]}
        )
    latency = latency_ns * slower
    result["latency"] = {**result["latency"], "median_ns": latency, "ci95_ns": [latency * 0.98, latency * 1.02]}
    return result
