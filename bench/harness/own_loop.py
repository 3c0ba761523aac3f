"""What a kernel gains by serving its requests through a loop of its own: the own-loop attack against the
reference it is timed beside.

    .venv/bin/python bench/harness/own_loop.py                  # 5 evaluations of each
    .venv/bin/python bench/harness/own_loop.py --evaluations 10

tests/harness/hostile/own_loop.py burns its unchecked warm-up calls so that a judge sizing requests by them
would give it one-call requests, then answers every request through a lean loop of its own, computing the
definition's reference's own arithmetic (demo/definitions/rmsnorm_h2048). The reference the judge times beside
it in pairs is that same arithmetic served normally. A control evaluation before each attack's serves that
arithmetic as a plain solution: what the pairing itself gives a kernel no faster than the reference shows in the
control's speedup, and the attack's gain is its speedup over the control's, evaluation by evaluation (each pair
a few seconds apart, so the host's drift between moments touches both alike). Each evaluation is made as a rerun
makes it (the rerun's precision, half the default tolerance, and its case budget) on the demo's whole workload,
with the two warm-up calls the attack counts on. Issue 43's bar: a gain of at most 5 %.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))

from harness.parent.api import evaluate  # noqa: E402
from harness.parent.stats import median_interval  # noqa: E402
from records.rerun import DEFAULT_CASE_BUDGET_SECONDS, rerun_precision  # noqa: E402
from tests.harness.conftest import write_solution  # noqa: E402

DEFINITION = REPOSITORY / "demo" / "definitions" / "rmsnorm_h2048"
HOSTILE = REPOSITORY / "tests" / "harness" / "hostile"
# own_loop.py counts on this many warm-up calls (its WARMUP) before it takes the loop over.
WARMUP = 2
TOLERANCE = 0.10


def own_loop_solution(folder: Path) -> Path:
    reach = "hostile_reach.py"
    return write_solution(
        folder,
        (HOSTILE / "own_loop.py").read_text(),
        definition="rmsnorm_h2048",
        dps=False,
        entry_point="kernel.py::run",
        extra_sources={reach: (HOSTILE / reach).read_text()},
    )


# The reference's arithmetic as a plain solution: what the attack computes, served normally.
CONTROL = """
import torch


def run(hidden_states, weight, eps):
    variance = hidden_states.pow(2).mean(dim=-1, keepdim=True)
    return hidden_states * torch.rsqrt(variance + eps) * weight
"""


def control_solution(folder: Path) -> Path:
    return write_solution(folder, CONTROL, definition="rmsnorm_h2048", dps=False, entry_point="kernel.py::run")


def suite_speedup(solution: Path, said: str) -> float | None:
    """One evaluation as a rerun makes it; its suite speedup, each case's printed."""
    result = evaluate(
        DEFINITION,
        DEFINITION / "workload.jsonl",
        solution,
        warmup=WARMUP,
        precision=rerun_precision(TOLERANCE),
        case_budget=DEFAULT_CASE_BUDGET_SECONDS,
        timeout=600,
    )
    if result.status != "PASSED" or result.speedup is None:
        print(f"{said}: {result.status} ({result.reason})")
        return None
    cases = "; ".join(
        f"{case.speedup.median:.3f} [{case.speedup.ci95[0]:.3f}, {case.speedup.ci95[1]:.3f}], "
        f"{case.calls_per_request} calls a request"
        for case in result.cases
        if case.speedup is not None
    )
    print(f"{said}: suite speedup {result.speedup.median:.3f}; cases {cases}", flush=True)
    return result.speedup.median


def geometric_mean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(value) for value in values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=5)
    arguments = parser.parse_args()
    print("load average at the start:", " ".join(f"{v:.2f}" for v in os.getloadavg()))
    gains, controls = [], []
    with tempfile.TemporaryDirectory(prefix="own-loop-") as folder:
        attack, control = own_loop_solution(Path(folder) / "attack"), control_solution(Path(folder) / "control")
        for number in range(1, arguments.evaluations + 1):
            served_normally = suite_speedup(control, f"evaluation {number}, control")
            own_loop = suite_speedup(attack, f"evaluation {number}, attack")
            if served_normally is None or own_loop is None:
                continue
            controls.append(served_normally)
            gains.append(own_loop / served_normally)
            print(f"evaluation {number}: the attack's gain over the control {gains[-1]:.3f}", flush=True)
    if gains:
        # The median's interval from the pairs' order statistics: no pair's size weighs more than its rank, so one
        # pair the host disturbed (it moves ±18 % on a 2-core VM) neither hides a gain nor makes one.
        low, high = median_interval(sorted(gains))
        print(
            f"control's suite speedup over the reference: geometric mean {geometric_mean(controls):.3f}; "
            f"the attack's gain over the control: median {statistics.median(gains):.3f} "
            f"(95 % interval {low:.3f} to {high:.3f}), "
            f"geometric mean {geometric_mean(gains):.3f}, largest {max(gains):.3f} "
            f"({len(gains)} pairs of evaluations; bar 1.05)"
        )
    print("load average at the end:", " ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
