"""Writes the demo's solution.json files and its reported runs (runs/reported.jsonl).

Run by hand from the repository root after changing a kernel or a figure:

    .venv/bin/python demo/build.py

Each solution.json is made from the kernel file beside it. Each reported run
carries the Workload and Implementation documents that importing the
definition folder and the solution.json produce (the same code reads them),
so importing demo/ in any order stores each document once.

The figures are what the KernelIndex harness (0.2.0, protocol kernelindex-1:
a judge process apart from the kernel's, fresh inputs every call, kernel and
reference timed by the judge in interleaved pairs) measured for each solution
on the two-core AMD EPYC this demo was made on, single-threaded, with the
options a rerun uses (demo/measure.py), on 2026-12-04 between 10:22 and 10:32
UTC on a quiet machine (no other work; the 1-minute load average, the
evaluations' own processes included, 0.4 to 1.7). Each case carries the
solution's median, the reference's median and the median of the pairs'
ratios (`speedup`, the figure a rerun measures) from the same evaluation, so
a rerun compares speedups over the reference rather than latencies measured
another day; of five evaluations each, the one with the middle suite
speedup. Five evaluations of one solution differed by up to 1.18 times in
suite speedup (rmsnorm-vectorised 1.328 to 1.562; rmsnorm-row-loop 1.17,
gemm-row-loop 1.16, the others within 1.11).
The harness times no solution that fails correctness, so softmax-exp2's
latencies are softmax-fused's at the ratio an evaluation with its own kernel
as the reference (`--reference`) gave, and its reference latencies
softmax-fused's.
Two runs are reported wrongly on purpose, so that reruns have something to
catch:
- rmsnorm-row-loop reports latencies 20 times lower than it runs, beside the
  reference's as measured, and speedups 20 times the measured ones;
- softmax-exp2 is reported as passed, though it is wrong beyond tolerance.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEMO = Path(__file__).resolve().parent
sys.path.insert(0, str(DEMO.parent))

from records.canonical import canonical_text  # noqa: E402
from records.manifest import Sealed, seal  # noqa: E402
from records.schema import REFERENCE_FIELDS, make_document  # noqa: E402
from records.sources.runnable import read_definition_folder, read_solution  # noqa: E402

AUTHOR = "KernelIndex demo"
OBSERVED_AT = "2026-12-01T15:23:00Z"
# How much faster than measured the "too fast" run claims to be.
TOO_FAST_FACTOR = 20


@dataclass(frozen=True)
class Solution:
    definition: str
    name: str
    entry_point: str
    description: str
    destination_passing_style: bool
    # Per-case medians in ns, in workload order, as the harness measured them; None: it failed correctness.
    # Re-measure: OMP_NUM_THREADS=1 python -m harness run --definition demo/definitions/D
    #   --workload demo/definitions/D/workload.jsonl --solution demo/solutions/D/S/solution.json --device cpu
    # and take the result's cases[].latency.median_ns ...
    measured_ns: tuple[float, ...] | None
    # ... and cases[].reference_latency.median_ns: the definition's reference, timed interleaved with the
    # solution in the same evaluation. A reported run carries both, so a rerun compares speedups.
    reference_ns: tuple[float, ...] | None = None
    # ... and cases[].speedup.median: the median of the ratios of the pairs, the figure a rerun measures
    # (records.rerun.reported_claim reads it beside the ratio of the two medians).
    speedups: tuple[float, ...] | None = None
    reported: str = "as measured"  # or "too fast", or "passed though wrong"

    @property
    def folder(self) -> Path:
        return DEMO / "solutions" / self.definition / self.name


SOLUTIONS = (
    Solution(
        "rmsnorm_h2048",
        "rmsnorm-vectorised",
        "rmsnorm.py::rmsnorm",
        "Vectorised over the batch; writes into the preallocated output.",
        True,
        (284_450, 364_252, 747_108),
        (390_019, 509_007, 1_313_928),
        speedups=(1.4002, 1.3648, 1.736),
    ),
    Solution(
        "rmsnorm_h2048",
        "rmsnorm-row-loop",
        "rmsnorm.py::rmsnorm",
        "A Python loop over the rows, returning a new tensor.",
        False,
        (2_474_326, 4_768_848, 8_309_147),
        (529_801, 842_489, 1_777_924),
        speedups=(0.2273, 0.1926, 0.2092),
        reported="too fast",
    ),
    Solution(
        "rmsnorm_h2048",
        "rmsnorm-eps-1e-2",
        "rmsnorm.py::rmsnorm",
        "Vectorised, with epsilon fixed at 1e-2 instead of the caller's.",
        True,
        None,
    ),
    Solution(
        "softmax_h8",
        "softmax-fused",
        "softmax.py::softmax",
        "Max-subtracted exponent written into the output, normalised in place.",
        True,
        (166_069, 553_897, 597_737),
        (113_358, 366_398, 422_997),
        speedups=(0.672, 0.6582, 0.6929),
    ),
    Solution(
        "softmax_h8",
        "softmax-row-loop",
        "softmax.py::softmax",
        "One row at a time, returning a new tensor.",
        False,
        (1_348_175, 2_617_875, 4_268_615),
        (142_793, 357_120, 402_771),
        speedups=(0.1012, 0.1374, 0.1006),
    ),
    Solution(
        "softmax_h8",
        "softmax-exp2",
        "softmax.py::softmax",
        "exp2 without the log2(e) scaling: fast, and wrong.",
        True,
        (118_407, 361_141, 381_954),
        (113_358, 366_398, 422_997),
        reported="passed though wrong",
    ),
    Solution(
        "swiglu_mlp_h256_i512",
        "swiglu-in-place",
        "mlp.py::swiglu_mlp",
        "Activation and gating in place; the down projection written into the output.",
        True,
        (528_197, 1_083_686, 1_802_788),
        (535_774, 1_200_267, 1_861_306),
        speedups=(1.0363, 1.0514, 1.0468),
    ),
    Solution(
        "swiglu_mlp_h256_i512",
        "swiglu-per-token",
        "mlp.py::swiglu_mlp",
        "Three matrix-vector products per token, returning a new tensor.",
        False,
        (1_500_457, 5_208_132, 9_181_976),
        (647_591, 1_258_875, 1_885_594),
        speedups=(0.4436, 0.2452, 0.2122),
    ),
    Solution(
        "swiglu_mlp_h256_i512",
        "swiglu-gelu",
        "mlp.py::swiglu_mlp",
        "GELU where SwiGLU has SiLU.",
        True,
        None,
    ),
    Solution(
        "gemm_n256_k512",
        "gemm-torch-mm",
        "gemm.py::gemm",
        "torch.mm into the preallocated output.",
        True,
        (610_075, 1_022_137, 2_066_446),
        (628_629, 1_050_101, 2_128_801),
        speedups=(1.0544, 1.0325, 1.0337),
    ),
    Solution(
        "gemm_n256_k512",
        "gemm-row-loop",
        "gemm.py::gemm",
        "One vector-matrix product per row of A, returning a new tensor.",
        False,
        (3_215_351, 6_817_263, 12_895_118),
        (629_539, 1_142_245, 2_107_856),
        speedups=(0.202, 0.1676, 0.1744),
    ),
    Solution(
        "gemm_n256_k512",
        "gemm-bf16",
        "gemm.py::gemm",
        "Multiplies in bfloat16: short of the tolerance.",
        True,
        None,
    ),
)


def solution_json(solution: Solution) -> dict[str, Any]:
    entry_file = solution.entry_point.split("::")[0]
    return {
        "name": solution.name,
        "definition": solution.definition,
        "author": AUTHOR,
        "description": solution.description,
        "spec": {
            "language": "python",
            "target_hardware": ["cpu"],
            "entry_point": solution.entry_point,
            "destination_passing_style": solution.destination_passing_style,
            "dependencies": ["torch"],
        },
        "sources": [{"path": entry_file, "content": (solution.folder / entry_file).read_text()}],
    }


def protocol() -> Sealed:
    document = make_document(
        "BenchmarkProtocol",
        "kernelindex-demo-submitter-0-2",
        {
            "harness": {"name": "demo-submitter", "version": "0.2"},
            "measurement": {
                "timer": "perf_counter_ns",
                "primaryStatistic": "median",
                "warmup": 10,
                "iterations": 50,
                "suiteStatistic": "geometric mean over the cases of the per-case median",
                "reference": "the definition's reference timed interleaved with the solution, in pairs, "
                "on fresh inputs every call (KernelIndex harness 0.2.0, protocol kernelindex-1); "
                "each case reports its median beside the solution's, and the median of the pairs' ratios "
                "(speedup)",
            },
            "correctness": {
                "reference": "definition reference implementation",
                "comparator": "allclose",
                "description": "Every element within atol + rtol·|reference| of the reference, "
                "with each case's tolerance; NaN or Inf fails.",
            },
            "comparability": {
                "family": "kernelindex_harness",
                "notes": "Demo runs reported by their submitter on a CPU; a KernelIndex rerun checks them.",
            },
        },
        title="Demo submitter 0.2",
    )
    return seal(document, "protocol")


# Where the figures above were measured: a CPU of the class "cpu", which names no model, so that the committed
# runs are rerun by a worker told it serves that class (the tests' workers are). `make run` measures the claims
# again on the machine it runs on (demo/local.py), in that machine's own class.
MADE_ON = {"vendor": "amd", "product": "CPU", "class": "cpu", "model": "AMD EPYC"}
MADE_WITH = {"torch": "2.13.0+cpu", "python": "3.11.7"}


def environment(hardware: dict[str, str] = MADE_ON, libraries: dict[str, str] = MADE_WITH) -> Sealed:
    document = make_document(
        "ExecutionEnvironment",
        "kernelindex-demo-cpu" if hardware["class"] == "cpu" else f"kernelindex-demo-{hardware['class']}",
        {"hardware": hardware, "software": {"libraries": libraries}},
        title="Demo CPU host, one thread" if hardware is MADE_ON else f"Demo host: {hardware['product']}, one thread",
        labels={"cpu-threads": "1"},
    )
    return seal(document, "environment")


def run_document(solution: Solution, cases: list[dict[str, Any]], observed_at: str = OBSERVED_AT) -> dict[str, Any]:
    external_id = f"demo/{solution.definition}/{solution.name}"
    spec: dict[str, Any] = {"observedAt": observed_at}
    reported = solution.measured_ns
    if solution.reported == "too fast" and reported is not None:
        # The reference's latencies as measured: the claimed speedup is TOO_FAST_FACTOR times the real one.
        reported = tuple(round(ns / TOO_FAST_FACTOR) for ns in reported)
    if solution.reported == "passed though wrong" or reported is not None:
        assert reported is not None, f"{solution.name}: a run reported as passed needs its latencies"
        assert solution.reference_ns is not None, f"{solution.name}: a run reported as passed needs the reference's"
        spec["status"] = "passed"
        spec["timing"] = {"latencyNs": {"median": geometric_mean(reported)}, "primaryStatistic": "median"}
        spec["cases"] = [
            {
                "workload": case["uuid"],
                "axes": case["axes"],
                "status": "passed",
                "latencyNs": ns,
                "referenceLatencyNs": reference_ns,
            }
            for case, ns, reference_ns in zip(cases, reported, solution.reference_ns, strict=True)
        ]
        if solution.speedups is not None:
            for case, speedup in zip(spec["cases"], reported_speedups(solution.speedups, solution), strict=True):
                case["speedup"] = speedup
    else:
        spec["status"] = "failed"
        spec["cases"] = [
            {"workload": case["uuid"], "axes": case["axes"], "status": "failed", "sourceStatus": "INCORRECT_NUMERICAL"}
            for case in cases
        ]
    spec["sourceNative"] = {"source": "kernelindex", "externalId": external_id, "benchmark": solution.definition}
    name = external_id.replace("/", "-").replace("_", "-")
    return make_document("BenchmarkRun", name, spec, title=f"{solution.name} · {solution.definition} · CPU")


def reported_speedups(speedups: tuple[float, ...], solution: Solution) -> tuple[float, ...]:
    factor = TOO_FAST_FACTOR if solution.reported == "too fast" else 1
    return tuple(round(speedup * factor, 4) for speedup in speedups)


def geometric_mean(values: tuple[float, ...]) -> float:
    return round(math.exp(sum(math.log(v) for v in values) / len(values)), 1)


def manifest(run: dict[str, Any], documents: dict[str, Sealed]) -> dict[str, Any]:
    for role, sealed in documents.items():
        run["spec"][REFERENCE_FIELDS[role]] = sealed.digest
    return {"run": seal(run, "run").value, **{role: sealed.value for role, sealed in documents.items()}}


def solution_files() -> dict[Path, str]:
    """Each solution.json, as its kernel file makes it."""
    return {
        solution.folder / "solution.json": json.dumps(solution_json(solution), indent=2, ensure_ascii=False) + "\n"
        for solution in SOLUTIONS
    }


def reported_runs(
    solutions: tuple[Solution, ...] = SOLUTIONS, host: Sealed | None = None, observed_at: str = OBSERVED_AT
) -> str:
    """runs/reported.jsonl: one canonical manifest per line, of `solutions` with their figures as measured on
    `host` (the environment), observed at `observed_at`. Reads the solution.json files as written."""
    shared = {"protocol": protocol(), "environment": host or environment()}
    lines = []
    for solution in solutions:
        workload, _ = read_definition_folder(DEMO / "definitions" / solution.definition)
        implementation = read_solution(solution.folder / "solution.json")
        documents = {**shared, "workload": workload, "implementation": implementation}
        run = run_document(solution, workload.value["spec"]["cases"], observed_at)
        lines.append(canonical_text(manifest(run, documents)))
    return "".join(line + "\n" for line in lines)


def main() -> None:
    for path, text in solution_files().items():
        path.write_text(text)
    (DEMO / "runs").mkdir(exist_ok=True)
    (DEMO / "runs" / "reported.jsonl").write_text(reported_runs())
    print(f"wrote {len(SOLUTIONS)} solution.json files and {len(SOLUTIONS)} reported runs")


if __name__ == "__main__":
    main()
