"""Writes the demo's solution.json files and its reported runs (runs/reported.jsonl).

Run by hand from the repository root after changing a kernel or a figure:

    .venv/bin/python demo/build.py

Each solution.json is made from the kernel file beside it. Each reported run
carries the Workload and Implementation documents that importing the
definition folder and the solution.json produce (the same code reads them),
so importing demo/ in any order stores each document once.

The latencies are what the KernelIndex harness measured for each solution on
the CPU this demo was made on (`python -m harness run ... --device cpu`,
sandboxed, torch's default threads; 10 warm-up and 50 timed iterations per
case, median per case, geometric mean over the cases for the suite). The
machine was shared with other work, so each solution was evaluated five times
and the evaluation with the lowest suite median is the one written here: on a
busy machine a loop of small operations ran up to ten times slower. The
harness times no solution that fails correctness, so softmax-exp2's figures
come from the same loop run outside it. Two runs are reported wrongly on
purpose, so that reruns have something to catch:
- rmsnorm-row-loop reports a latency 20 times faster than it runs;
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
from records.sources.artifacts import read_definition_folder, read_solution  # noqa: E402

AUTHOR = "KernelIndex demo"
OBSERVED_AT = "2026-12-01T11:30:00Z"
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
    # Re-measure: python -m harness run --definition demo/definitions/D --workload demo/definitions/D/workload.jsonl
    #             --solution demo/solutions/D/S/solution.json --device cpu
    measured_ns: tuple[float, ...] | None
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
        (58_226, 180_834, 475_755),
    ),
    Solution(
        "rmsnorm_h2048",
        "rmsnorm-row-loop",
        "rmsnorm.py::rmsnorm",
        "A Python loop over the rows, returning a new tensor.",
        False,
        (1_013_395, 2_178_424, 4_068_191),
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
        (32_218, 75_434, 77_056),
    ),
    Solution(
        "softmax_h8",
        "softmax-row-loop",
        "softmax.py::softmax",
        "One row at a time, returning a new tensor.",
        False,
        (559_410, 1_255_976, 2_244_934),
    ),
    Solution(
        "softmax_h8",
        "softmax-exp2",
        "softmax.py::softmax",
        "exp2 without the log2(e) scaling: fast, and wrong.",
        True,
        (35_700, 86_800, 87_300),
        reported="passed though wrong",
    ),
    Solution(
        "swiglu_mlp_h256_i512",
        "swiglu-in-place",
        "mlp.py::swiglu_mlp",
        "Activation and gating in place; the down projection written into the output.",
        True,
        (85_810, 192_674, 323_650),
    ),
    Solution(
        "swiglu_mlp_h256_i512",
        "swiglu-per-token",
        "mlp.py::swiglu_mlp",
        "Three matrix-vector products per token, returning a new tensor.",
        False,
        (338_104, 1_428_216, 2_929_670),
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
        (87_943, 165_450, 319_238),
    ),
    Solution(
        "gemm_n256_k512",
        "gemm-row-loop",
        "gemm.py::gemm",
        "One vector-matrix product per row of A, returning a new tensor.",
        False,
        (1_188_791, 2_428_636, 4_965_436),
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
        "kernelindex-demo-submitter-0-1",
        {
            "harness": {"name": "demo-submitter", "version": "0.1"},
            "measurement": {
                "timer": "perf_counter_ns",
                "primaryStatistic": "median",
                "warmup": 10,
                "iterations": 50,
                "suiteStatistic": "geometric mean over the cases of the per-case median",
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
        title="Demo submitter 0.1",
    )
    return seal(document, "protocol")


def environment() -> Sealed:
    document = make_document(
        "ExecutionEnvironment",
        "kernelindex-demo-cpu",
        {
            "hardware": {"vendor": "intel", "product": "CPU", "class": "cpu", "model": "Intel(R) Xeon(R) Processor"},
            "software": {"libraries": {"torch": "2.13.0", "python": "3.11"}},
        },
        title="Demo CPU host",
    )
    return seal(document, "environment")


def run_document(solution: Solution, cases: list[dict[str, Any]]) -> dict[str, Any]:
    external_id = f"demo/{solution.definition}/{solution.name}"
    spec: dict[str, Any] = {"observedAt": OBSERVED_AT}
    reported = solution.measured_ns
    if solution.reported == "too fast" and reported is not None:
        reported = tuple(round(ns / TOO_FAST_FACTOR) for ns in reported)
    if solution.reported == "passed though wrong" or reported is not None:
        assert reported is not None, f"{solution.name}: a run reported as passed needs its latencies"
        spec["status"] = "passed"
        spec["timing"] = {"latencyNs": {"median": geometric_mean(reported)}, "primaryStatistic": "median"}
        spec["cases"] = [
            {"workload": case["uuid"], "axes": case["axes"], "status": "passed", "latencyNs": ns}
            for case, ns in zip(cases, reported, strict=True)
        ]
    else:
        spec["status"] = "failed"
        spec["cases"] = [
            {"workload": case["uuid"], "axes": case["axes"], "status": "failed", "sourceStatus": "INCORRECT_NUMERICAL"}
            for case in cases
        ]
    spec["sourceNative"] = {"source": "kernelindex", "externalId": external_id, "benchmark": solution.definition}
    name = external_id.replace("/", "-").replace("_", "-")
    return make_document("BenchmarkRun", name, spec, title=f"{solution.name} · {solution.definition} · CPU")


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


def reported_runs() -> str:
    """runs/reported.jsonl: one canonical manifest per line. Reads the solution.json files as written."""
    shared = {"protocol": protocol(), "environment": environment()}
    lines = []
    for solution in SOLUTIONS:
        workload, _ = read_definition_folder(DEMO / "definitions" / solution.definition)
        implementation = read_solution(solution.folder / "solution.json")
        documents = {**shared, "workload": workload, "implementation": implementation}
        lines.append(canonical_text(manifest(run_document(solution, workload.value["spec"]["cases"]), documents)))
    return "".join(line + "\n" for line in lines)


def main() -> None:
    for path, text in solution_files().items():
        path.write_text(text)
    (DEMO / "runs").mkdir(exist_ok=True)
    (DEMO / "runs" / "reported.jsonl").write_text(reported_runs())
    print(f"wrote {len(SOLUTIONS)} solution.json files and {len(SOLUTIONS)} reported runs")


if __name__ == "__main__":
    main()
