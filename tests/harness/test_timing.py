"""Timing: the reference and the solution, per case, with the real protocol (10 warm-up, 50 timed)."""

from __future__ import annotations

from pathlib import Path

from tests.harness.conftest import Problem, run_harness, write_solution

MS = 1_000_000


def test_a_solution_that_sleeps_2_ms_is_timed_at_2_ms_plus_its_compute(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        import time
        import torch

        def run(x, y, out):
            time.sleep(0.002)
            torch.add(x, y, out=out)
        """,
    )
    result = run_harness(add_problem, solution, warmup=10, iterations=50)

    assert result.status == "PASSED"
    assert result.protocol.model_dump() == {
        "name": "kernelindex",
        "version": "kernelindex-1",
        "correctness_rounds": 3,
        "warmup": 10,
        "iterations": 50,
        "timer": "perf_counter_ns",
        "l2_flush": "none (cpu)",
        "statistic": "median",
    }
    for case in result.cases:
        assert case.latency is not None and case.reference_latency is not None
        assert case.latency.n == 50 and case.reference_latency.n == 50
        compute = case.reference_latency.median_ns
        # Never less than the sleep; generous above it (a shared CPU oversleeps).
        assert 2 * MS <= case.latency.median_ns < 2 * MS + compute + 5 * MS
        low, high = case.latency.ci95_ns
        assert case.latency.min_ns <= low <= case.latency.median_ns <= high <= case.latency.max_ns
    assert result.latency is not None
    assert 2 * MS <= result.latency.median_ns < 7 * MS
    assert result.latency.n == 100
