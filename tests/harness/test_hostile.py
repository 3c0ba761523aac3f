"""Hostile solutions: each attack in tests/harness/hostile/, turned into an rmsnorm solution, must fail.

A rerun's verdict moves a run's evidence level, so a kernel must never write its
own verdict. Each attack runs through `evaluate` in the real sandbox on the demo's
rmsnorm definition, with two small cases, and must end in a failure of the
kernel (never PASSED, never blamed on the reference) with a reason, within its
time limit; then the same process evaluates the honest kernel and gets PASSED.
Some attacks may pass instead, if they gain nothing: their speedup over the
reference (the judge's figure) may not be above the honest kernel's (see
hostile/README.md).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness import evaluate
from harness.parent.api import read_inputs
from harness.parent.job import build_job
from harness.parent.results import EvaluationResult
from tests.harness.conftest import write_solution

# Every test here turns a hostile kernel on the harness: recorded per harness version (tests/harness/suite_record.py).
pytestmark = pytest.mark.hostile

ROOT = Path(__file__).resolve().parent.parent.parent
DEFINITION = ROOT / "demo" / "definitions" / "rmsnorm_h2048"
HONEST = ROOT / "demo" / "solutions" / "rmsnorm_h2048" / "rmsnorm-vectorised" / "solution.json"
HOSTILE = Path(__file__).resolve().parent / "hostile"
REACH = "hostile_reach.py"
WARMUP, ITERATIONS, MEMORY_MB = 2, 20, 1024
# fill_disk.py writes up to 1 GiB: four times this.
SCRATCH_MB = 256
# Past its timeout, an evaluation may still take this long to kill the sandbox and drain its pipes.
KILL_MARGIN_SECONDS = 20
# "Gains nothing": a speedup over the reference at most the honest kernel's over this share, measured the same
# way just after (on a loaded two-core host two evaluations of one kernel differ by up to a quarter).
NOISE = 0.75


@dataclass(frozen=True)
class Attack:
    file: str
    dps: bool = True
    timeout: float = 60
    may_pass_without_gain: bool = False
    # Public files the attack reads beside its kernel (what anyone can compute from the published cases).
    public_cases: bool = False


ATTACKS = {
    "forged result lines": Attack("forged_lines.py", dps=False),
    "sample flood": Attack("sample_flood.py"),
    "line flood": Attack("line_flood.py"),
    "patched reporter": Attack("patch_reporter.py"),
    "patched comparator": Attack("patch_comparator.py"),
    "patched timer": Attack("patch_timer.py"),
    "patched Tensor.__le__": Attack("patch_tensor_compare.py"),
    "replaced clocks and their saved copies": Attack("fake_clocks.py"),
    "expected read from the judge's frames": Attack("frame_reading.py"),
    "a subclass named Tensor": Attack("tensor_subclass.py", dps=False),
    "memoising on data_ptr": Attack("memo_data_ptr.py", dps=False),
    "filling a destination once": Attack("fill_output_once.py"),
    "spinning to a figure": Attack("spin_to_figure.py", dps=False),
    "detecting the timing loop": Attack("stack_detection.py"),
    "precomputing at import": Attack("precompute_at_import.py", may_pass_without_gain=True),
    "background thread": Attack("background_thread.py", may_pass_without_gain=True),
    "poisoned reference": Attack("poison_reference.py"),
    "memory through memfd": Attack("memfd_memory.py"),
    "memory through tmpfs in a user namespace": Attack("userns_tmpfs.py"),
    "filling the disk": Attack("fill_disk.py"),
    "process bomb": Attack("process_bomb.py"),
    "thread bomb": Attack("thread_bomb.py"),
    # The judge measures every request itself: what the kernel's process reports of its calls decides nothing.
    "understating every call twentyfold": Attack("understate_time.py", may_pass_without_gain=True),
    "redistributing time within a request": Attack("redistribute_time.py", may_pass_without_gain=True),
    "scaling reported times to the slack": Attack("scale_to_slack.py", may_pass_without_gain=True),
    "spinning while the reference is timed": Attack("spin_while_reference.py", may_pass_without_gain=True),
    "wrong only on the case's own seed": Attack("wrong_on_case_seed.py", public_cases=True),
    "making the host look busy": Attack("look_busy.py", may_pass_without_gain=True),
}
# How much busier than beside the honest kernel the judge may find the host beside a hostile one: the two
# evaluations run one after the other, and the host's other work moves a little between them.
HOST_BUSY_NOISE = 0.1


@pytest.fixture(autouse=True)
def one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # On two shared cores, torch's second thread makes CPU medians jump by 100x at random; the medians
    # compared here must come from the kernels, not the scheduler. The harness passes this through.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two small cases of the demo definition, with its tolerance."""
    first = json.loads((DEFINITION / "workload.jsonl").read_text().splitlines()[0])
    cases = [{**first, "uuid": f"hostile-{rows}", "axes": {"batch_size": rows}} for rows in (64, 128)]
    path = tmp_path_factory.mktemp("workload") / "workload.jsonl"
    path.write_text("".join(json.dumps(case) + "\n" for case in cases))
    return path


def hostile_solution(folder: Path, attack: Attack, workload: Path) -> Path:
    extra = {REACH: (HOSTILE / REACH).read_text()}
    if attack.public_cases:
        extra["public_cases.json"] = json.dumps(public_cases(workload))
    return write_solution(
        folder,
        (HOSTILE / attack.file).read_text(),
        definition="rmsnorm_h2048",
        dps=attack.dps,
        entry_point="kernel.py::run",
        extra_sources=extra,
    )


def public_cases(workload: Path) -> list[dict[str, Any]]:
    """The cases as a judge reads them, seeds included: all of it follows from the published definition and
    workload, so an attacker can compute it as this does."""
    inputs = read_inputs(DEFINITION, workload, HONEST, None)
    job, _ = build_job(inputs, {}, None, str)
    cases: list[dict[str, Any]] = job["cases"]
    return cases


def timed_evaluation(solution: Path, workload: Path, timeout: float) -> tuple[EvaluationResult, float]:
    started = time.monotonic()
    result = evaluate(
        DEFINITION,
        workload,
        solution,
        timeout=timeout,
        warmup=WARMUP,
        iterations=ITERATIONS,
        memory_mb=MEMORY_MB,
        scratch_mb=SCRATCH_MB,
    )
    return result, time.monotonic() - started


def summary(result: EvaluationResult) -> str:
    cases = ", ".join(f"{case.uuid}: {case.status}" for case in result.cases)
    median = result.latency.median_ns if result.latency else None
    speedup = result.speedup.median if result.speedup else None
    said = f"{result.status} ({result.reason}); median {median} ns, speedup {speedup}; cases {cases}"
    return f"{said}; log: {result.log_tail[-600:]}"


def looked_busier(result: EvaluationResult, honest: EvaluationResult) -> float:
    """How much busier the host looked to the judge beside the kernel than beside the honest one (1 where either
    evaluation did not measure it)."""
    if result.host_busy is None or honest.host_busy is None:
        return 1.0
    return result.host_busy - honest.host_busy


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_hostile_solution_fails_and_the_next_evaluation_is_honest(name: str, workload: Path, tmp_path: Path) -> None:
    attack = ATTACKS[name]
    solution = hostile_solution(tmp_path / "hostile", attack, workload)
    result, elapsed = timed_evaluation(solution, workload, attack.timeout)
    honest, _ = timed_evaluation(HONEST, workload, 60)

    assert elapsed < attack.timeout + KILL_MARGIN_SECONDS, f"{name}: {elapsed:.0f} s; {summary(result)}"
    assert honest.status == "PASSED", f"after {name}: {summary(honest)}"
    if attack.may_pass_without_gain and result.status == "PASSED":
        # The judge's figure, paired with the reference in each evaluation, so the host's load falls on both.
        assert result.speedup is not None and honest.speedup is not None
        gained = NOISE * result.speedup.median > honest.speedup.median
        honest_speedup = honest.speedup.median
        assert not gained, f"{name} passed faster than the honest kernel ({honest_speedup:.3f}x): {summary(result)}"
        # Nor does it make the host look busier than it is (the rule would allow a busy host's wider spread). A
        # kernel that does so does it each time it runs, the host's neighbours only now and then: up to two more
        # pairs of evaluations, and the least it looked busier is held.
        looked = looked_busier(result, honest)
        for _ in range(2):
            if looked <= HOST_BUSY_NOISE:
                break
            again, _ = timed_evaluation(solution, workload, attack.timeout)
            honest, _ = timed_evaluation(HONEST, workload, 60)
            looked = min(looked, looked_busier(again, honest))
        assert looked <= HOST_BUSY_NOISE, f"{name} made the host look {looked:.0%} busier: {summary(result)}"
        return
    # INVALID_REFERENCE would blame the reference for what the kernel did.
    assert result.status not in ("PASSED", "INVALID_REFERENCE"), f"{name}: {summary(result)}"
    assert result.reason, f"{name}: {summary(result)}"


def test_one_call_requests_served_through_the_kernels_own_loop_gain_nothing(workload: Path, tmp_path: Path) -> None:
    """The judge's cost of a request is taken off each request, so a kernel whose own request loop is leaner than
    the calibrated one is credited the difference, the more so the fewer calls a request holds (issue 43, point 3:
    burning the unchecked warm-up calls gave every timed request one call, and the attack gained 1.06 to 1.19
    times on the suite, 1.2 to 1.45 on the smallest case). own_loop.py computes the definition's reference's own
    arithmetic, so the reference the judge times beside it is the same arithmetic served normally: it may gain at
    most 5 % over it, beyond what the pairs' interval leaves open."""
    solution = hostile_solution(tmp_path / "own-loop", Attack("own_loop.py", dps=False), workload)

    result, _ = timed_evaluation(solution, workload, 120)

    assert result.status == "PASSED", summary(result)
    for case in result.cases:
        assert case.speedup is not None and case.calls_per_request is not None, summary(result)
        # The judge sizes its requests by the timed pairs' figures: the burnt warm-up sized the first pair alone.
        assert case.calls_per_request > 1, summary(result)
        assert case.speedup.ci95[0] <= 1.05, summary(result)
