"""The verdict benchmark: how often a rerun of an honest demo kernel decides, and decides right.

    .venv/bin/python bench/verdicts/run.py                       # quiet host, 5 reruns per kernel
    .venv/bin/python bench/verdicts/run.py --busy 2              # beside two busy loops
    .venv/bin/python bench/verdicts/run.py --reruns 3 --kernels rmsnorm-vectorised softmax-fused
    .venv/bin/python bench/verdicts/run.py --device cuda          # on the GPU

For each honest demo kernel (demo/build.py: every solution with measured figures whose outputs are right), the
claim its submitter would make on this machine (one evaluation's figures, as make run's demo/local.py reports
them: the suite's latency and speedup over the reference and each case's, every one a rerun checks) is held
against reruns made
exactly as a worker makes them (`python -m harness run` with the run's protocol, one thread, `--precision` half
the tolerance and the rerun's case budget; records.rerun.rerun_harness_options), and the evidence rule
(records.rerun.verdict) decides; so are claims inflated 1.25, 1.5, 2 and 3 times (every latency divided by the
factor, every speedup multiplied). A rerun is up to
`RERUN_MAX_ATTEMPTS` evaluations: an inconclusive attempt is tried again after the retry delay, as the worker
does, and the first conclusive attempt's verdict stands. Every claim of a kernel is decided on the same
evaluations, so the figures compare.

It prints, per claim factor, how many reruns came out reproduced / inconclusive / not reproduced and the median
seconds to the verdict (the attempts' evaluations plus the retry delays between them), then per kernel; and the
spread between evaluations: the largest ratio between two passed evaluations' suite speedups of one kernel,
which the rule's RUN_TO_RUN must cover. `--busy N` runs N busy loops beside it for the whole run. With `--json
FILE` every evaluation's figures are written there too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))
sys.path.insert(0, str(REPOSITORY / "demo"))

from build import DEMO, SOLUTIONS, Solution, run_document  # noqa: E402
from measure import figures  # noqa: E402

from records.rerun import (  # noqa: E402
    DEFAULT_CASE_BUDGET_SECONDS,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    QUIET_HOST_BUSY,
    REPRODUCED,
    RETRY_AFTER_SECONDS,
    CaseFigures,
    Claim,
    Estimate,
    measured_from_result,
    reported_claim,
    verdict,
)
from records.worker_protocol import harness_arguments, rerun_harness_options  # noqa: E402

CLAIM_FACTORS = (1.0, 1.25, 1.5, 2.0, 3.0)
LEVELS = (REPRODUCED, INCONCLUSIVE, NOT_REPRODUCED)
LABELS = {REPRODUCED: "reproduced", INCONCLUSIVE: "inconclusive", NOT_REPRODUCED: "not reproduced"}


@dataclass
class Evaluation:
    kernel: str
    seconds: float
    result: dict[str, Any]

    @property
    def suite_speedup(self) -> float | None:
        speedup = self.result.get("speedup") or {}
        return speedup.get("median") if self.result.get("status") == "PASSED" else None


@dataclass
class Outcome:
    """One rerun of one claim: its verdict, the attempts it took and the seconds to it."""

    level: str
    attempts: int
    seconds: float
    reason: str


@dataclass
class Tally:
    outcomes: dict[float, list[Outcome]] = field(default_factory=lambda: defaultdict(list))


def honest_kernels(names: Sequence[str] | None) -> list[Solution]:
    kernels = [s for s in SOLUTIONS if s.measured_ns and s.reported != "passed though wrong"]
    return [s for s in kernels if not names or s.name in names]


def measured_claim(solution: Solution, device: str, tolerance: float, case_budget: float) -> Claim:
    """The claim a submitter on this machine would make: one evaluation's figures, reported as the demo reports
    them (make run's demo/local.py) and read as a rerun reads a run's claim (records.rerun.reported_claim):
    the suite's latency and speedup and each case's. Measured here, whatever CPU model or GPU this is: a claim
    is judged on the hardware it was made on."""
    with tempfile.TemporaryDirectory(prefix="verdicts-") as folder:
        evaluation = evaluate(solution, device, tolerance, case_budget, Path(folder))
    assert evaluation.suite_speedup, f"{solution.name} on {device}: {evaluation.result.get('reason')}"
    latencies, references, speedups = figures(evaluation.result)
    measured = replace(
        solution, measured_ns=latencies, reference_ns=references, speedups=speedups, reported="as measured"
    )
    cases = [{"uuid": case["uuid"], "axes": {}} for case in evaluation.result["cases"]]
    spec = run_document(measured, cases)["spec"]
    return reported_claim(spec, spec["timing"]["latencyNs"]["median"])


def inflated(claim: Claim, factor: float) -> Claim:
    """The claim `factor` times better on every figure: latencies divided by it, speedups multiplied."""

    def better(estimate: Estimate | None, scale: float) -> Estimate | None:
        return Estimate.of(estimate.median * scale) if estimate else None

    return Claim(
        claim.latency_ns / factor if claim.latency_ns else None,
        claim.speedup * factor if claim.speedup else None,
        claim.speedup_statistic,
        tuple(
            CaseFigures(case.workload, better(case.latency_ns, 1 / factor), better(case.speedup, factor))
            for case in claim.cases
        ),
    )


def evaluate(solution: Solution, device: str, tolerance: float, case_budget: float, folder: Path) -> Evaluation:
    definition = DEMO / "definitions" / solution.definition
    options = harness_arguments(
        rerun_harness_options(
            device=device, protocol="kernelindex", tolerance=tolerance, case_budget=case_budget, timeout=600
        )
    )
    command = [sys.executable, "-m", "harness", "run", "--definition", str(definition)]
    command += ["--workload", str(definition / "workload.jsonl"), "--solution", str(solution.folder / "solution.json")]
    command += ["--json", str(folder / "result.json"), *options]
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    started = time.monotonic()
    subprocess.run(command, cwd=REPOSITORY, env=environment, check=True, capture_output=True)
    seconds = time.monotonic() - started
    return Evaluation(solution.name, seconds, json.loads((folder / "result.json").read_text()))


def rerun(
    solution: Solution, device: str, tolerance: float, case_budget: float, attempts: int, retry_after: float
) -> tuple[dict[float, Outcome], list[Evaluation]]:
    """One rerun per claim factor, on shared evaluations: each factor takes the first conclusive attempt."""
    claimed = measured_claim(solution, device, tolerance, case_budget)
    decided: dict[float, Outcome] = {}
    evaluations: list[Evaluation] = []
    elapsed = 0.0
    for attempt in range(1, attempts + 1):
        with tempfile.TemporaryDirectory(prefix="verdicts-") as folder:
            evaluation = evaluate(solution, device, tolerance, case_budget, Path(folder))
        evaluations.append(evaluation)
        elapsed += evaluation.seconds
        measured = measured_from_result(evaluation.result)
        for factor in CLAIM_FACTORS:
            if factor in decided and decided[factor].level != INCONCLUSIVE:
                continue
            said = verdict(inflated(claimed, factor), measured, tolerance)
            if said.level != INCONCLUSIVE or attempt == attempts or not said.retry:
                decided[factor] = Outcome(said.level, attempt, elapsed, said.reason)
        if all(f in decided and decided[f].level != INCONCLUSIVE for f in CLAIM_FACTORS):
            break
        elapsed += retry_after
    return decided, evaluations


@contextmanager
def busy_loops(count: int) -> Iterator[None]:
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def spread(evaluations: Sequence[Evaluation]) -> dict[str, float]:
    """Per kernel, the largest ratio between two passed evaluations' suite speedups."""
    speedups: dict[str, list[float]] = defaultdict(list)
    for evaluation in evaluations:
        if evaluation.suite_speedup:
            speedups[evaluation.kernel].append(evaluation.suite_speedup)
    return {kernel: max(values) / min(values) for kernel, values in speedups.items() if len(values) > 1}


def report(tallies: dict[str, Tally], evaluations: Sequence[Evaluation], loads: tuple[str, str]) -> str:
    lines = [f"load average at the start: {loads[0]}; at the end: {loads[1]}", ""]
    lines += ["| claim | reproduced | inconclusive | not reproduced | median s to verdict | attempts (mean) |"]
    lines += ["|---|---:|---:|---:|---:|---:|"]
    for factor in CLAIM_FACTORS:
        outcomes = [o for tally in tallies.values() for o in tally.outcomes[factor]]
        lines.append(_row(f"×{factor:g}", outcomes))
    lines += ["", "| kernel | claim | reproduced | inconclusive | not reproduced | median s | attempts (mean) |"]
    lines += ["|---|---|---:|---:|---:|---:|---:|"]
    for kernel, tally in tallies.items():
        for factor in CLAIM_FACTORS:
            lines.append(_row(f"{kernel} | ×{factor:g}", tally.outcomes[factor]))
    spreads = spread(evaluations)
    if spreads:
        worst = max(spreads, key=lambda kernel: spreads[kernel])
        lines += ["", f"largest spread between two evaluations' suite speedups: {spreads[worst]:.3f}× ({worst})"]
        lines += ["per kernel: " + ", ".join(f"{k} {v:.3f}×" for k, v in spreads.items())]
    seconds = [e.seconds for e in evaluations]
    lines += [f"evaluations: {len(seconds)}, median {statistics.median(seconds):.1f} s, max {max(seconds):.1f} s"]
    busy = sorted(e.result["host_busy"] for e in evaluations if e.result.get("host_busy") is not None)
    if busy:
        shares = f"median {statistics.median(busy):.1%}, {busy[0]:.1%} to {busy[-1]:.1%}"
        quiet = sum(share <= QUIET_HOST_BUSY for share in busy)
        lines += [f"host_busy (other work's share of the CPUs): {shares}; {quiet} of {len(busy)} quiet"]
    return "\n".join(lines)


def _row(label: str, outcomes: Sequence[Outcome]) -> str:
    counts = Counter(o.level for o in outcomes)
    median = statistics.median(o.seconds for o in outcomes) if outcomes else float("nan")
    attempts = statistics.fmean(o.attempts for o in outcomes) if outcomes else float("nan")
    cells = " | ".join(str(counts[level]) for level in LEVELS)
    return f"| {label} | {cells} | {median:.1f} | {attempts:.2f} |"


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reruns", type=int, default=5)
    parser.add_argument("--busy", type=int, default=0, help="busy loops to run beside the reruns")
    parser.add_argument("--kernels", nargs="*", help="demo solution names (default: every honest one)")
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--case-budget", type=float, default=None, help="seconds of pairs per case")
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument("--retry-after", type=float, default=RETRY_AFTER_SECONDS, help="seconds between attempts")
    parser.add_argument("--json", type=Path, help="write every evaluation's result here")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (the claims are measured there, once per rerun)")
    arguments = parser.parse_args(argv)
    budget = arguments.case_budget or DEFAULT_CASE_BUDGET_SECONDS
    tallies: dict[str, Tally] = {}
    evaluations: list[Evaluation] = []
    started_load = _load()
    with busy_loops(arguments.busy):
        for number in range(1, arguments.reruns + 1):
            for solution in honest_kernels(arguments.kernels):
                decided, made = rerun(
                    solution, arguments.device, arguments.tolerance, budget, arguments.attempts, arguments.retry_after
                )
                evaluations += made
                tally = tallies.setdefault(solution.name, Tally())
                for factor, outcome in decided.items():
                    tally.outcomes[factor].append(outcome)
                said = ", ".join(f"×{f:g} {LABELS[o.level]}" for f, o in decided.items())
                print(f"rerun {number} of {solution.name}: {len(made)} evaluation(s); {said}", flush=True)
    print()
    print(report(tallies, evaluations, (started_load, _load())))
    if arguments.json:
        rows = [{"kernel": e.kernel, "seconds": e.seconds, "result": e.result} for e in evaluations]
        arguments.json.write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
