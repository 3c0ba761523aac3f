"""Measures the demo's honest solutions as their submitter would, and prints the figures for build.py.

Run by hand from the repository root, on a quiet machine, after changing a kernel or the harness:

    .venv/bin/python demo/measure.py [--evaluations 5] [--solutions rmsnorm-vectorised ...]

Each solution with figures in build.py's SOLUTIONS (the wrong ones excepted: their figures are made up as
build.py says) is evaluated `--evaluations` times with the options a rerun uses (one thread, pairs until the
speedup's interval is within half the default tolerance; records.rerun.rerun_harness_options); of those, the
evaluation with the middle suite speedup gives each case's `latency.median_ns`,
`reference_latency.median_ns` and `speedup.median` (the median of its pairs' ratios, the figure a rerun
measures). It prints each solution's three tuples, the suite speedups of every evaluation
and the load average, and changes no file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

DEMO = Path(__file__).resolve().parent
sys.path.insert(0, str(DEMO.parent))

from build import SOLUTIONS, Solution  # noqa: E402

from records.rerun import DEFAULT_CASE_BUDGET_SECONDS  # noqa: E402
from records.worker_protocol import harness_arguments, rerun_harness_options  # noqa: E402

TOLERANCE = 0.10


def evaluation(solution: Solution) -> dict[str, Any]:
    definition = DEMO / "definitions" / solution.definition
    options = harness_arguments(
        rerun_harness_options(
            device="cpu",
            protocol="kernelindex",
            tolerance=TOLERANCE,
            case_budget=DEFAULT_CASE_BUDGET_SECONDS,
            timeout=600,
        )
    )
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "result.json"
        command = [sys.executable, "-m", "harness", "run", "--definition", str(definition)]
        command += ["--workload", str(definition / "workload.jsonl")]
        command += ["--solution", str(solution.folder / "solution.json"), "--json", str(output), *options]
        subprocess.run(command, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, cwd=DEMO.parent)
        result: dict[str, Any] = json.loads(output.read_text())
    if result["status"] != "PASSED":
        raise SystemExit(f"{solution.name}: {result['status']}: {result.get('reason')}")
    return result


def figures(result: dict[str, Any]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...]]:
    cases = result["cases"]
    return (
        tuple(round(case["latency"]["median_ns"]) for case in cases),
        tuple(round(case["reference_latency"]["median_ns"]) for case in cases),
        tuple(round(case["speedup"]["median"], 4) for case in cases),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Measure the demo's honest solutions for build.py.")
    parser.add_argument("--evaluations", type=int, default=5)
    parser.add_argument("--solutions", nargs="*")
    arguments = parser.parse_args()
    print("load average at the start:", " ".join(f"{v:.2f}" for v in os.getloadavg()))
    for solution in SOLUTIONS:
        if not solution.measured_ns or solution.reported == "passed though wrong":
            continue
        if arguments.solutions and solution.name not in arguments.solutions:
            continue
        results = sorted(
            (evaluation(solution) for _ in range(arguments.evaluations)), key=lambda r: r["speedup"]["median"]
        )
        measured, reference, paired = figures(results[len(results) // 2])
        speedups = ", ".join(f"{r['speedup']['median']:.3f}" for r in results)
        print(f"{solution.name}: suite speedups {speedups}")
        print(f"    {measured},\n    {reference},\n    speedups={paired},")
    print("load average at the end:", " ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
