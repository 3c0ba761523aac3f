"""Timing: the judge's own measure of each request, in pairs with the reference, with the real protocol."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.jail.sandbox import LATENCY_CHECK
from harness.judge.host import Mark, mark, other_share
from tests.harness.conftest import Problem, run_harness, write_problem, write_solution

MS = 1_000_000

# Burns `ms` of CPU a call, whatever its clock says; and, below, sleeps as long instead.
SPINS = """
import time
import torch

def run(x, y, out):
    end = time.thread_time_ns() + {ns}
    while time.thread_time_ns() < end:
        pass
    torch.add(x, y, out=out)
"""
SLEEPS = """
import time
import torch

def run(x, y, out):
    time.sleep({seconds})
    torch.add(x, y, out=out)
"""
# Hides its work from the serving thread's clock: each call's {ns} of CPU is split between four helper processes,
# while the serving thread, at the lowest priority, spins: runnable but waiting for a CPU behind them nearly all the
# time (a wait the judge takes off the wall clock). Processes, not threads: Python's threads would take turns,
# blocked, not waiting for a CPU.
HELPERS = """
import os
import time
import torch

HELPERS = 4
pipes = []
for _ in range(HELPERS):
    (start_read, start_write), (done_read, done_write) = os.pipe(), os.pipe()
    if os.fork() == 0:
        while True:
            os.read(start_read, 1)
            end = time.thread_time_ns() + {ns} // HELPERS
            while time.thread_time_ns() < end:
                pass
            os.write(done_write, b"x")
    os.set_blocking(done_read, False)
    pipes.append((start_write, done_read))

def run(x, y, out):
    for start, _ in pipes:
        os.write(start, b"x")
    os.setpriority(os.PRIO_PROCESS, 0, 19)
    waiting = [done for _, done in pipes]
    while waiting:
        for done in list(waiting):
            try:
                os.read(done, 1)
                waiting.remove(done)
            except BlockingIOError:
                pass
    torch.add(x, y, out=out)
"""


@pytest.mark.hostile
def test_a_call_is_measured_by_its_latency_or_the_cpu_its_processes_used(add_problem: Problem, tmp_path: Path) -> None:
    spins = run_harness(add_problem, write_solution(tmp_path / "spins", SPINS.format(ns=10 * MS)), iterations=20)
    sleeps = run_harness(add_problem, write_solution(tmp_path / "sleeps", SLEEPS.format(seconds=0.002)), iterations=20)

    assert spins.status == "PASSED", spins.reason
    assert spins.protocol.model_dump() == {
        "name": "kernelindex",
        "version": "kernelindex-3",
        "correctness_rounds": 3,
        "warmup": 1,
        "iterations": 20,
        "timer": "judge_latency",
        "l2_flush": "none (cpu)",
        "statistic": "median",
        "precision": None,
        "case_budget_s": None,
    }
    assert spins.limits.clock_check == LATENCY_CHECK
    for case in spins.cases:
        assert case.latency is not None and case.reference_latency is not None
        # Calls of 10 ms are timed one a request (requests of about 8 ms of work): 20 timed iterations, 20 pairs.
        assert (case.pairs, case.calls_per_request) == (20, 1)
        assert case.latency.n == 20
        # The spin is CPU time, and the harness's own cost of a request is taken off (a busy host moves that
        # cost by a fraction of a millisecond either way).
        assert 9.5 * MS <= case.latency.median_ns < 11.5 * MS
        low, high = case.latency.ci95_ns
        assert case.latency.min_ns <= low <= case.latency.median_ns <= high <= case.latency.max_ns
    # On the CPU a latency is a latency: a kernel that sleeps 2 ms a call takes 2 ms a call, though it computes
    # for a fraction of that (measured by its CPU time alone, it was shown at 0.2 to 0.5 ms).
    assert sleeps.status == "PASSED", sleeps.reason
    for case in sleeps.cases:
        assert case.latency is not None and case.latency.median_ns >= 2 * MS, case.latency


@pytest.mark.hostile
def test_work_hidden_in_helper_threads_is_measured_as_the_cpu_time_it_took(
    add_problem: Problem, tmp_path: Path
) -> None:
    """The serving thread's run-queue wait is taken off the wall clock, so a kernel can make that thread wait behind
    threads of its own that do the work; their CPU time is the group's, and the figure is never below it."""
    result = run_harness(add_problem, write_solution(tmp_path / "helpers", HELPERS.format(ns=8 * MS)), iterations=20)

    assert result.status == "PASSED", result.reason
    for case in result.cases:
        # 8 ms of the helpers' CPU a call; the wall clock less the serving thread's wait is a fraction of it (on a
        # quiet host about 0.1 ms).
        assert case.latency is not None and case.latency.median_ns >= 7.2 * MS, case.latency


def test_with_a_precision_pairs_are_added_until_the_interval_is_that_narrow(tmp_path: Path) -> None:
    # Kernel and reference alike spend 1 ms of CPU a call: every pair's ratio is near 1.
    spinning_reference = (
        SPINS.format(ns=MS)
        .replace("def run(x, y, out):", "def run(x, y):")
        .replace("    torch.add(x, y, out=out)", "    return x + y")
    )
    problem = write_problem(tmp_path / "problem", reference=spinning_reference)
    solution = write_solution(tmp_path / "spins", SPINS.format(ns=MS))

    result = run_harness(problem, solution, iterations=20, precision=0.25, case_budget=60)

    assert result.status == "PASSED", result.reason
    assert (result.protocol.precision, result.protocol.case_budget_s) == (0.25, 60)
    for case in result.cases:
        assert case.speedup is not None and case.pairs is not None and case.pairs >= 6
        low, high = case.speedup.ci95
        assert case.speedup.median - low <= 0.25 * case.speedup.median
        assert high - case.speedup.median <= 0.25 * case.speedup.median


@pytest.mark.hostile
def test_a_kernel_that_waits_between_its_calls_gets_as_many_pairs_as_one_that_does_not(
    add_problem: Problem, tmp_path: Path
) -> None:
    """The case's budget is spent in the judge's measure, not in wall time: a kernel that sleeps 5 ms beside each
    millisecond of work would otherwise end its case after a sixth of the pairs, with an interval as wide as it
    likes (issue: a kernel cannot buy itself a wider interval)."""
    works = SPINS.format(ns=MS)
    waits = works.replace("    torch.add(x, y, out=out)", "    time.sleep(0.005)\n    torch.add(x, y, out=out)")
    # A precision no interval reaches: each case takes pairs until its budget is spent.
    options = {"iterations": 6, "precision": 1e-6, "case_budget": 0.5}
    honest = run_harness(add_problem, write_solution(tmp_path / "works", works), **options)
    waiting = run_harness(add_problem, write_solution(tmp_path / "waits", waits), **options)

    assert honest.status == waiting.status == "PASSED", (honest.reason, waiting.reason)
    for working, idle in zip(honest.cases, waiting.cases, strict=True):
        assert working.pairs is not None and idle.pairs is not None
        # Budgeted by the wall clock, the waiting kernel's case ended after a sixth as many pairs.
        assert idle.pairs >= 0.6 * working.pairs, (idle.pairs, working.pairs)


def test_the_judge_measures_how_much_of_the_host_other_work_used(add_problem: Problem, tmp_path: Path) -> None:
    # The evidence rule allows a narrower spread between evaluations on a quiet host (records.rerun), so the
    # judge says how quiet it was. The kernel's own work is not other work: a kernel spinning 10 ms a call
    # leaves the figure where the host's background is, and busy loops on every CPU raise it.
    spins = write_solution(tmp_path / "spins", SPINS.format(ns=10 * MS))
    alone = run_harness(add_problem, spins, iterations=20)
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        beside_loops = run_harness(add_problem, spins, iterations=20)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()

    for result in (alone, beside_loops):
        assert result.status == "PASSED", result.reason
        shares = [case.host_busy for case in result.cases]
        assert all(share is not None and 0 <= share <= 1 for share in shares), shares
        assert result.host_busy == max(share for share in shares if share is not None)
    assert alone.host_busy is not None and beside_loops.host_busy is not None
    assert beside_loops.host_busy >= 0.3
    # The loops take a good part of what other work left free: outside load (another job on a shared host) may
    # already hold much of it, and the judge counts that too.
    headroom = 1 - alone.host_busy
    assert beside_loops.host_busy - alone.host_busy >= 0.3 * headroom, (alone.host_busy, beside_loops.host_busy)


def test_the_hosts_share_counts_only_work_that_is_not_the_evaluations() -> None:
    # Two CPUs over 10 ms: 20 ms of CPU time. 12 ms of it busy, of which the judge used 2 ms and the served
    # groups 4 ms: other work used 6 ms, 30 %. The evaluation's own work alone reads 0, never below.
    start = Mark(busy_ns=0.0, cpus=2, judge_ns=0, served_ns=0.0, wall_ns=0)
    end = Mark(busy_ns=12 * MS, cpus=2, judge_ns=2 * MS, served_ns=4 * MS, wall_ns=10 * MS)
    assert other_share(start, end) == pytest.approx(0.3)
    ours = Mark(busy_ns=5 * MS, cpus=2, judge_ns=2 * MS, served_ns=4 * MS, wall_ns=10 * MS)
    assert other_share(start, ours) == 0.0
    # Where the host shows no counters, or no served group's CPU time, the share is unknown, never 0.
    assert mark(None) is None
    assert other_share(None, end) is None and other_share(start, None) is None
