"""The harness benchmark: what the harness adds to a timing, and what one evaluation costs.

    .venv/bin/python bench/harness/run.py               # CPU; and CUDA too when torch sees a GPU
    .venv/bin/python bench/harness/run.py --rounds 3    # a quicker look

1. Timing overhead. For each function (a small elementwise add, a 512x512
   matmul), the harness's median for one case (10 warm-up, 50 timed
   iterations; the kernel in its sandbox, the judge in its own) against a bare
   loop over the same function in this process, on inputs laid out as the
   judge lays them: fresh values for every call, a block of calls' inputs
   written before the block runs (perf_counter_ns around each call; on CUDA,
   events around each call after writing 2x L2). The two take turns, round
   after round, so a neighbour's load falls on both; the figure is the median
   over rounds of harness median / bare median (target <= 1.05). Both run
   single-threaded (OMP_NUM_THREADS=1 unless set).
2. What the boundary costs. The wall time of a whole evaluation of one tiny
   case (`warmup=0, iterations=1`), sandboxed and unsandboxed, beside
   `python -c "import torch"` alone; the cost of one more timed call
   (judge <-> kernel: fresh inputs, the exchange, a share of the request's
   round trip, the reference's call beside it), from evaluations with 10 and
   4010 timed iterations; and the cost of one more pair of requests of one
   call each (both sides thawed, measured and frozen again: the fixed cost of
   a pair), from the pairs a tiny case takes in 5 s with a precision it never
   reaches. With `--compare-with REV`, the same figures for the harness at
   git revision REV (extracted to a temporary folder, run in its own process;
   a harness without pairs has no per-pair figure), and the ratios.
3. On a GPU host only: checks that need one (a CUDA C++ solution built with
   load_inline, an allocation past the GPU's memory, the environment block),
   printed as ok/FAILED; they are not in the test suite, which must not skip.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

# One thread, here and (passed through) in the harness's child: on a shared machine a multi-threaded
# op waits for its slowest thread, and a neighbour's load would then decide both figures.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))

from harness import evaluate  # noqa: E402
from harness.judge.tensors import build_inputs  # noqa: E402

FUNCTIONS = {
    "add_256x256": ("torch.add(x, y, out=out)", 256),
    "matmul_512x512": ("torch.matmul(x, y, out=out)", 512),
}


def write_problem(folder: Path, name: str, body: str, size: int) -> tuple[Path, Path, Path]:
    folder.mkdir(parents=True)
    shape = ["n", "n"]
    definition = {
        "name": name,
        "axes": {"n": {"type": "var"}},
        "inputs": {"x": {"shape": shape, "dtype": "float32"}, "y": {"shape": shape, "dtype": "float32"}},
        "outputs": {"out": {"shape": shape, "dtype": "float32"}},
        "reference": f"import torch\n\ndef run(x, y):\n    out = torch.empty_like(x)\n    {body}\n    return out\n",
    }
    (folder / "definition.json").write_text(json.dumps(definition))
    case = {"uuid": "bench", "axes": {"n": size}, "inputs": {"x": {"type": "random"}, "y": {"type": "random"}}}
    (folder / "workload.jsonl").write_text(json.dumps(case) + "\n")
    solution = {
        "name": f"{name}-bench",
        "definition": name,
        "spec": {"language": "python", "entry_point": "main.py::run", "destination_passing_style": True},
        "sources": [{"path": "main.py", "content": f"import torch\n\ndef run(x, y, out):\n    {body}\n"}],
    }
    (folder / "solution.json").write_text(json.dumps(solution))
    return folder / "definition.json", folder / "workload.jsonl", folder / "solution.json"


BLOCK = 10
# Timed iterations added to measure one's cost: enough that they outweigh an evaluation's noise (about 0.5 s).
EXTRA_ITERATIONS = 4000


def bare_median(function: Callable[..., Any], make_arguments: Callable[[], list[Any]], device: str) -> float:
    for _ in range(10):
        function(*make_arguments())
    if not device.startswith("cuda"):
        samples = []
        for _ in range(50 // BLOCK):
            # As the judge does: a block's inputs all written first, then the calls back to back.
            block = [make_arguments() for _ in range(BLOCK)]
            for arguments in block:
                start = time.perf_counter_ns()
                function(*arguments)
                samples.append(time.perf_counter_ns() - start)
        return statistics.median(samples)
    arguments = make_arguments()
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device=device)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(50)]
    for begin, end in events:
        flush.zero_()
        begin.record()
        function(*arguments)
        end.record()
    torch.cuda.synchronize()
    return statistics.median(begin.elapsed_time(end) * 1e6 for begin, end in events)


def fresh_arguments(size: int, device: str) -> Callable[[], list[Any]]:
    """A maker of (x, y, out) with new random values on every call, as the judge gives a kernel."""
    spec = {"source": "random", "shape": [size, size], "dtype": "float32"}
    case = {"uuid": "bench", "seed": 0, "axes": {}, "inputs": {"x": spec, "y": spec}}
    seeds = iter(range(1, 10**9))

    def make() -> list[Any]:
        inputs = list(build_inputs(case, device, None, seed=next(seeds)).values())
        return [*inputs, torch.empty(size, size, device=device)]

    return make


def overhead(root: Path, device: str, rounds: int) -> None:
    for name, (body, size) in FUNCTIONS.items():
        definition, workload, solution = write_problem(root / f"{name}-{device}", name, body, size)
        make_arguments = fresh_arguments(size, device)
        namespace: dict[str, Any] = {"torch": torch}
        exec(f"def run(x, y, out):\n    {body}\n", namespace)
        ratios, harness_ns, bare_ns = [], [], []
        for _ in range(rounds):
            bare = bare_median(namespace["run"], make_arguments, device)
            result = evaluate(definition, workload, solution, device=device)
            assert result.status == "PASSED", result.reason
            assert result.cases[0].latency is not None
            measured = result.cases[0].latency.median_ns
            harness_ns.append(measured)
            bare_ns.append(bare)
            ratios.append(measured / bare)
        print(
            f"{device:5} {name:16} harness median {statistics.median(harness_ns) / 1e3:9.1f} µs   "
            f"bare median {statistics.median(bare_ns) / 1e3:9.1f} µs   "
            f"ratio {statistics.median(ratios):.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)})"
        )


# Run in a process of its own, from a given checkout: the evaluation's wall time, and its status.
_EVALUATE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from harness import evaluate
options = json.loads(sys.argv[3])
start = time.perf_counter()
result = evaluate(*sys.argv[4:7], **options)
case = result.cases[0] if result.cases else None
print(json.dumps({"seconds": time.perf_counter() - start, "status": result.status, "reason": result.reason,
                  "pairs": getattr(case, "pairs", None), "calls": getattr(case, "calls_per_request", None)}))
"""
# Seconds of pairs a tiny case is given, with a precision it never reaches, to count what a pair costs.
PAIR_BUDGET_SECONDS = 5.0


def evaluation_outcome(checkout: Path, files: tuple[Path, Path, Path], **options: Any) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-c", _EVALUATE, str(checkout), "-", json.dumps(options), *map(str, files)],
        check=True,
        capture_output=True,
        text=True,
    )
    outcome: dict[str, Any] = json.loads(completed.stdout.splitlines()[-1])
    assert outcome["status"] == "PASSED", outcome["reason"]
    return outcome


def timed_evaluation(checkout: Path, files: tuple[Path, Path, Path], **options: Any) -> float:
    return float(evaluation_outcome(checkout, files, **options)["seconds"])


def seconds_per_pair(checkout: Path, files: tuple[Path, Path, Path], device: str) -> float | None:
    """Pairs until the budget is gone, each request of as many calls as the judge sizes it (about 8 ms of work,
    at most the exchange's slots less one: for this tiny kernel, the most); it prints how many."""
    options = {"precision": 1e-9, "case_budget": PAIR_BUDGET_SECONDS, "warmup": 0, "iterations": 5}
    try:
        outcome = evaluation_outcome(checkout, files, device=device, **options)
    except subprocess.CalledProcessError:
        return None  # a harness that times no pairs
    if outcome.get("calls"):
        print(f"{device:5} {checkout.name:24} a pair's requests hold {outcome['calls']} calls each")
    return PAIR_BUDGET_SECONDS / outcome["pairs"] if outcome.get("pairs") else None


def boundary_cost(root: Path, device: str, rounds: int, baseline: Path | None) -> None:
    files = write_problem(root / f"tiny-{device}", "tiny", "torch.add(x, y, out=out)", 1)
    checkouts = {"this harness": REPOSITORY} | ({"baseline": baseline} if baseline else {})
    figures: dict[str, dict[str, list[float]]] = {}
    for _ in range(rounds):
        for label, checkout in checkouts.items():
            figure = figures.setdefault(label, {"sandboxed": [], "unsandboxed": [], "per call": [], "per pair": []})
            for sandbox in (True, False):
                seconds = timed_evaluation(checkout, files, device=device, sandbox=sandbox, warmup=0, iterations=1)
                figure["sandboxed" if sandbox else "unsandboxed"].append(seconds)
            short = timed_evaluation(checkout, files, device=device, warmup=0, iterations=10)
            long = timed_evaluation(checkout, files, device=device, warmup=0, iterations=10 + EXTRA_ITERATIONS)
            figure["per call"].append((long - short) / EXTRA_ITERATIONS)
            pair = seconds_per_pair(checkout, files, device)
            if pair is not None:
                figure["per pair"].append(pair)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True, capture_output=True)
        figures.setdefault("python -c 'import torch'", {"alone": []})["alone"].append(time.perf_counter() - start)
    for label, figure in figures.items():
        for what, values in figure.items():
            if not values:
                continue
            ratio = ""
            if baseline and label == "this harness" and figures["baseline"].get(what):
                ratio = f"   x{statistics.median(values) / statistics.median(figures['baseline'][what]):.2f} baseline"
            print(
                f"{device:5} {label:24} {what:12} median {statistics.median(values) * 1e3:9.3f} ms "
                f"(min {min(values) * 1e3:.3f}, max {max(values) * 1e3:.3f}, {len(values)} runs){ratio}"
            )


def extract(revision: str, folder: Path) -> Path:
    """The repository at `revision`, as files in a folder of its own."""
    folder.mkdir()
    archive = subprocess.run(["git", "-C", str(REPOSITORY), "archive", revision], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


CUDA_ADD = """
__global__ void add_kernel(const float* x, const float* y, float* out, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

void run(torch::Tensor x, torch::Tensor y, torch::Tensor out) {
    long n = x.numel();
    add_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
}
"""


def gpu_checks(root: Path) -> None:
    definition, workload, _ = write_problem(root / "gpu-checks", "gpu_add", "torch.add(x, y, out=out)", 1024)

    def solution(name: str, sources: list[dict[str, str]], language: str, entry_point: str) -> Path:
        path = root / f"{name}.json"
        spec = {"language": language, "entry_point": entry_point, "destination_passing_style": True}
        path.write_text(json.dumps({"name": name, "definition": "gpu_add", "spec": spec, "sources": sources}))
        return path

    cuda_cpp = solution(
        "cuda-add",
        [
            {"path": "kernel.cu", "content": CUDA_ADD},
            {"path": "binding.cpp", "content": "void run(torch::Tensor x, torch::Tensor y, torch::Tensor out);\n"},
        ],
        "cuda",
        "kernel.cu::run",
    )
    hoarder = solution(
        "gpu-hoarder",
        [
            {
                "path": "main.py",
                "content": "import torch\n\ndef run(x, y, out):\n    torch.empty(2**50, device=x.device)\n",
            }
        ],
        "python",
        "main.py::run",
    )
    checks = [
        ("CUDA C++ through load_inline", cuda_cpp, "PASSED"),
        ("an allocation past the GPU's memory", hoarder, "OUT_OF_MEMORY"),
    ]
    for label, path, expected in checks:
        result = evaluate(definition, workload, path, device="cuda", timeout=600)
        verdict = "ok" if result.status == expected else "FAILED"
        print(f"cuda  check: {label:40} {result.status:14} {verdict}  {result.reason or ''}"[:300])
        if label.startswith("CUDA C++"):
            environment = result.environment
            keys = ("device_name", "compute_capability", "driver", "cuda", "hardware_class", "clocks_mhz")
            print("cuda  environment:", {key: environment.get(key) for key in keys})
            print("cuda  protocol:", result.protocol.model_dump())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--compare-with", metavar="REV", help="also measure the harness at this git revision")
    parser.add_argument(
        "--devices", nargs="+", choices=("cpu", "cuda"), help="default: cpu, and cuda where torch sees it"
    )
    arguments = parser.parse_args()
    devices = arguments.devices or ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, devices: {', '.join(devices)}")
    if torch.cuda.is_available():
        print(f"GPU: {torch.cuda.get_device_name()}")
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as folder:
        baseline = extract(arguments.compare_with, Path(folder) / "baseline") if arguments.compare_with else None
        for device in devices:
            overhead(Path(folder), device, arguments.rounds)
            boundary_cost(Path(folder), device, arguments.rounds, baseline)
        if "cuda" in devices:
            gpu_checks(Path(folder))


if __name__ == "__main__":
    main()
