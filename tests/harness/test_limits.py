"""The wall-time and memory limits stop a solution, and everything it started, and the next evaluation works."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.harness.conftest import (
    CORRECT_ADD,
    Problem,
    assert_next_evaluation_works,
    run_harness,
    write_problem,
    write_solution,
)
from tests.sandbox_groups import frozen_groups_of, groups_of, processes_in

ROOT = Path(__file__).resolve().parent.parent.parent

LOOPS_FOREVER = """
def run(x, y, out):
    while True:
        pass
"""


@pytest.mark.hostile
def test_an_infinite_loop_is_stopped_as_a_timeout_within_the_limit_with_every_process_it_started(
    add_problem: Problem, tmp_path: Path
) -> None:
    # One wall-time limit run out, for both what a timeout reports and what it kills: each costs the whole limit.
    # 16 s, so that the control (the reference as the solution, three calls a case) has 8 to pass in: about 3 s on
    # a quiet two-core host; beside a load of five it once needed more than 10.
    marker = str(10_000 + uuid.uuid4().int % 80_000)
    solution = write_solution(
        tmp_path / "s",
        f"""
        import subprocess

        def run(x, y, out):
            # A grandchild in a session of its own, which a process-group kill alone would miss.
            subprocess.Popen(["sleep", "{marker}"], start_new_session=True)
            while True:
                pass
        """,
    )
    started = time.monotonic()
    result = run_harness(add_problem, solution, timeout=16)
    elapsed = time.monotonic() - started

    assert result.status == "TIMEOUT", result.reason
    assert result.reason == "the evaluation passed its wall-time limit of 16 s"
    assert [case.status for case in result.cases] == ["TIMEOUT", "NOT_RUN"]
    assert result.cases[1].reason == "not run: the evaluation stopped at case case-small"
    # Generous: the limit, the kill, and the control evaluation with the reference as the solution (which
    # passes well within the limit, so the timeout is the kernel's).
    assert elapsed < 80
    assert not _processes_running(["sleep", marker])
    assert_next_evaluation_works(add_problem, tmp_path)


def test_a_timeout_that_recurs_with_the_reference_as_the_solution_is_the_hosts_not_the_kernels(
    tmp_path: Path,
) -> None:
    # A definition this host cannot judge within the limit (here its reference never ends): a kernel as good
    # as the reference must not be convicted of a timeout. The reference never ends, so any limit proves it: a
    # short one, as each side runs to it.
    problem = write_problem(tmp_path / "problem", reference="def run(x, y):\n    while True:\n        pass\n")
    result = run_harness(problem, write_solution(tmp_path / "s", CORRECT_ADD), timeout=6)

    assert result.status == "HARNESS_ERROR", result.reason
    assert "cannot judge this definition within its limits" in (result.reason or "")
    # The control stops at the share of the limit it had to pass within: past it, the answer is this one anyway.
    assert "the reference as the solution did not finish within 50% of it (3 s; it passed 0 of" in (result.reason or "")


def test_the_reference_as_its_own_solution_is_its_own_control(tmp_path: Path) -> None:
    # Judging a reference against itself (as the published definitions are, bench/sol_examples/references.py),
    # the control would run the same evaluation again: a definition this host cannot judge says so after one.
    reference = "def run(x, y):\n    while True:\n        pass\n"
    problem = write_problem(tmp_path / "problem", reference=reference)
    solution = write_solution(tmp_path / "s", reference, dps=False, language="pytorch", entry_point="reference.py::run")
    result = run_harness(problem, solution, timeout=5)

    assert result.status == "HARNESS_ERROR", result.reason
    assert result.reason == (
        "the evaluation passed its wall-time limit of 5 s (it passed 0 of 2 cases in that time), "
        "and the solution is the definition's reference: "
        "this host cannot judge this definition within its limits"
    )


def test_a_timeout_whose_control_needed_most_of_the_limit_is_the_hosts_not_the_kernels(tmp_path: Path) -> None:
    # The reference as the solution would pass, but only in most of the limit (here: a reference that takes
    # seconds to load, on each side): on a busier host it would time out too, so the kernel's timeout proves
    # nothing. Its three loads (the judge's, then each served process's, one after another) take 9 s, more than
    # the half of the 14 s limit the control is given.
    reference = "import time\n\ntime.sleep(3)\n\n\ndef run(x, y):\n    return x + y\n"
    problem = write_problem(tmp_path / "problem", reference=reference)
    result = run_harness(problem, write_solution(tmp_path / "s", LOOPS_FOREVER), timeout=14)

    assert result.status == "HARNESS_ERROR", result.reason
    assert "this host cannot judge this definition within its limits" in (result.reason or "")


def test_a_timeout_whose_control_failed_otherwise_is_the_hosts_not_the_kernels(tmp_path: Path) -> None:
    # The control ends quickly, but not PASSED (here its reference fails once it runs in the reference's own
    # process, as a reference too large for the host's memory does): it cannot vouch that the kernel's timeout
    # was the kernel's.
    reference = (
        "import sys\n\n\ndef run(x, y):\n"
        "    if sys.argv[0].endswith('kernel/__main__.py'):  # a served process (python -m harness.kernel)\n"
        "        raise MemoryError('too large for this host')\n"
        "    return x + y\n"
    )
    problem = write_problem(tmp_path / "problem", reference=reference)
    # The control fails at its first call, a few seconds in: 12 s leaves it 6.
    result = run_harness(problem, write_solution(tmp_path / "s", LOOPS_FOREVER), timeout=12)

    assert result.status == "HARNESS_ERROR", result.reason
    assert "the reference as the solution ended" in (result.reason or "")
    assert "this host cannot judge this definition within its limits" in (result.reason or "")


def test_memory_the_reference_needs_as_much_of_is_the_hosts_not_the_kernels(tmp_path: Path) -> None:
    # A reference that needs more memory than the limit: a solution as good as it (here: it) runs out of memory,
    # and so does the control, so the limit is the host's, not the kernel's.
    reference = (
        "import torch\n\n\ndef run(x, y):\n    hoard = torch.ones(2 * 2**30 // 4)\n    return x + y + hoard[-1] - 1\n"
    )
    problem = write_problem(tmp_path / "problem", reference=reference)
    solution = write_solution(tmp_path / "s", reference, dps=False)
    result = run_harness(problem, solution, memory_mb=1024)

    assert result.status == "HARNESS_ERROR", result.reason
    assert "this host cannot judge this definition within its limits" in (result.reason or "")


@pytest.mark.hostile
def test_an_allocation_far_past_the_limit_is_out_of_memory(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        import torch

        def run(x, y, out):
            hoard = torch.ones(64 * 2**30 // 4)
            out.copy_(x + y + hoard[0])
        """,
    )
    result = run_harness(add_problem, solution, memory_mb=1024)

    assert result.status == "OUT_OF_MEMORY"
    assert [case.status for case in result.cases] == ["OUT_OF_MEMORY", "OUT_OF_MEMORY"]
    assert "can't allocate memory" in (result.cases[0].reason or "")
    assert_next_evaluation_works(add_problem, tmp_path)


@pytest.mark.hostile
def test_memory_that_grows_past_the_limit_is_stopped_by_the_watchdog(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        import time
        import torch

        hoard = []

        def run(x, y, out):
            for _ in range(200):
                hoard.append(torch.ones(16 * 2**20 // 4))
                time.sleep(0.02)
            out.copy_(x + y)
        """,
    )
    result = run_harness(add_problem, solution, memory_mb=700)

    assert result.status == "OUT_OF_MEMORY"
    assert result.reason is not None
    # The cgroup's limit where the harness may make one (root, as in CI), else the resident-memory watchdog.
    assert "memory limit of 700 MiB" in result.reason or "resident, over the limit of 700 MiB" in result.reason
    assert [case.status for case in result.cases] == ["OUT_OF_MEMORY", "NOT_RUN"]
    assert_next_evaluation_works(add_problem, tmp_path)


def test_a_judge_killed_at_its_own_memory_limit_says_so(tmp_path: Path) -> None:
    # The judge runs the reference for its expected outputs; a reference past the judge's limit killed the judge,
    # and the reason said only "killed by signal 9" (SOL-ExecBench's basic_transformer_block on this host).
    problem = write_problem(
        tmp_path / "problem",
        reference="""
        import torch

        def run(x, y):
            held = torch.ones(1_000_000_000)  # 4 GB, past the judge's 2 x 700 + 2048 MiB
            return x + y + held[0] - 1
        """,
    )
    result = run_harness(problem, write_solution(tmp_path / "s", CORRECT_ADD), memory_mb=700)

    assert result.status == "HARNESS_ERROR", result.reason
    assert "the judge reached its own memory limit of 3448 MiB (2 times the solution's and 2048 MiB more" in (
        result.reason or ""
    )


@pytest.mark.hostile
def test_a_solution_that_kills_its_own_process_keeps_the_cases_already_reported(
    add_problem: Problem, tmp_path: Path
) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        import os
        import signal

        def run(x, y, out):
            if x.shape[0] == 64:
                os.kill(os.getpid(), signal.SIGKILL)
            out.copy_(x + y)
        """,
    )
    result = run_harness(add_problem, solution)

    assert [case.status for case in result.cases] == ["PASSED", "RUNTIME_ERROR"]
    assert result.cases[0].latency is not None
    assert "killed by signal 9 during this case" in (result.cases[1].reason or "")
    assert result.status == "RUNTIME_ERROR"


def _processes_running(command: list[str]) -> bool:
    wanted = "\0".join(command).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if cmdline.read().rstrip(b"\0") == wanted:
                    return True
        except OSError:
            continue
    return False


WIDE_DEFINITION = {
    "name": "widen_rows",
    "description": "each element of x repeated along a wide row",
    "op_type": "elementwise",
    "axes": {"n": {"type": "var"}, "width": {"type": "const", "value": 128}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
    "outputs": {"out": {"shape": ["n", "width"], "dtype": "float32"}},
}
WIDEN = "def run(x, out):\n    out.copy_(x.unsqueeze(1).expand(-1, 128))\n"


def widen_problem(folder: Path, rows: int) -> Problem:
    """Outputs 128 times their input: a case of `rows` rows has 512 bytes of output a row."""
    return write_problem(
        folder,
        definition=WIDE_DEFINITION,
        cases=[{"uuid": "wide", "axes": {"n": rows}, "inputs": {"x": {"type": "random"}}}],
        reference="def run(x):\n    return x.unsqueeze(1).expand(-1, 128).contiguous()\n",
    )


def test_a_case_of_large_outputs_is_judged_within_the_memory_its_limit_allows(tmp_path: Path) -> None:
    # 640 MiB of output a call, from 5 MiB of input: the judge must not keep what it does not need (it once kept
    # every calibration request's outputs, eleven copies of them, and was killed past its own limit).
    problem = widen_problem(tmp_path / "problem", 1_310_720)
    solution = write_solution(tmp_path / "s", WIDEN, definition="widen_rows")
    result = run_harness(problem, solution, memory_mb=2300, warmup=1, iterations=1)

    assert result.status == "PASSED", result.reason


def test_the_exchange_is_not_counted_against_the_kernels_memory_limit(tmp_path: Path) -> None:
    # 256 MiB of output a call, so 512 MiB of exchange (two slots): the harness's memory, not the kernel's, which
    # here needs almost nothing of its own. Charged to the kernel, it left a reference that needs 4 GiB of its 8
    # no room (SOL-ExecBench's whisper output projection died before its first call).
    problem = widen_problem(tmp_path / "problem", 524_288)
    solution = write_solution(tmp_path / "s", WIDEN, definition="widen_rows")
    result = run_harness(problem, solution, memory_mb=700, warmup=1, iterations=1)

    assert result.status == "PASSED", result.reason


def test_a_case_larger_than_the_hosts_memory_is_refused_before_anything_is_allocated(tmp_path: Path) -> None:
    # A terabyte of output a call: the exchanges are never allocated (the host's out-of-memory killer would pick
    # its own victim), and the evaluation says what is missing without convicting the kernel.
    problem = widen_problem(tmp_path / "problem", 2**31)
    solution = write_solution(tmp_path / "s", "def run(x, out):\n    pass\n", definition="widen_rows")
    started = time.monotonic()
    result = run_harness(problem, solution)

    assert result.status == "HARNESS_ERROR", result.reason
    assert "this host cannot judge this definition" in (result.reason or "")
    assert "GiB of memory shared between the judge and the served processes" in (result.reason or "")
    assert time.monotonic() - started < 30


def _steadily_frozen_groups_of(evaluator: int, within: float) -> list[Path]:
    """The groups frozen in two looks a second apart: the reference's while the kernel loops in its first checked
    call, not one the judge freezes for a moment as it calibrates."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        first = set(frozen_groups_of(evaluator))
        time.sleep(1)
        if steady := sorted(first & set(frozen_groups_of(evaluator))):
            return steady
    return []


def test_what_a_killed_evaluation_left_frozen_is_freed_by_the_next_even_one_refused_up_front(
    add_problem: Problem, tmp_path: Path
) -> None:
    # A rerun worker kills a harness that overruns its deadline (harness.worker), and with it the judge, which has
    # no time to tell what it served to exit. The processes it served, frozen between requests, do not die with it
    # (a frozen process's SIGKILL waits for a thaw) and keep their memory. The next evaluation frees them before it
    # counts the memory the host has, so it is not refused for theirs.
    solution = write_solution(tmp_path / "s", LOOPS_FOREVER)
    command = [sys.executable, "-m", "harness", "run", "--timeout", "120", "--warmup", "1", "--iterations", "3"]
    command += ["--definition", str(add_problem.definition), "--workload", str(add_problem.workload)]
    harness = subprocess.Popen(
        [*command, "--solution", str(solution)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        left = _steadily_frozen_groups_of(harness.pid, within=60)
        spared = set().union(*(processes_in(folder) for folder in left))
        # Everything else the evaluation started (the judge first), killed at once: a judge that outlived its
        # parent for a moment would tell the frozen processes to exit, and no leftover would be made.
        for pid in set().union(*(processes_in(folder) for folder in groups_of(harness.pid))) - spared:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    finally:
        harness.kill()
        harness.wait()
    time.sleep(1)
    assert [folder for folder in left if processes_in(folder)], "nothing was left frozen"

    huge = widen_problem(tmp_path / "huge", 2**31)
    result = run_harness(huge, write_solution(tmp_path / "h", "def run(x, out):\n    pass\n", definition="widen_rows"))

    assert result.status == "HARNESS_ERROR", result.reason
    assert "this host cannot judge this definition" in (result.reason or "")
    assert not [folder for folder in left if folder.exists()]
