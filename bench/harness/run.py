"""The harness benchmark: what the harness adds to a timing, and what one evaluation costs.

    .venv/bin/python bench/harness/run.py               # CPU; and CUDA too when torch sees a GPU
    .venv/bin/python bench/harness/run.py --rounds 3    # a quicker look

1. Timing overhead. For each function (a small elementwise add, a 512x512
   matmul), the harness's median for one case (10 warm-up, 50 timed
   iterations, in its sandboxed child) against a bare loop over the same
   function and the same inputs in this process (perf_counter_ns around each
   call; on CUDA, events around each call after writing 2x L2). The two take
   turns, round after round, so a neighbour's load falls on both; the figure is
   the median over rounds of harness median / bare median (target <= 1.05).
   Both run single-threaded (OMP_NUM_THREADS=1 unless set).
2. Fixed cost. The wall time of a whole evaluation of one tiny case timed once,
   sandboxed and unsandboxed, beside `python -c "import torch"` alone: process
   start, sandbox, torch import, loading, input build and checks.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness import evaluate
from harness.job import case_seed
from harness.tensors import build_inputs

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


def bare_median(function: Callable[..., Any], arguments: list[Any], device: str) -> float:
    for _ in range(10):
        function(*arguments)
    if not device.startswith("cuda"):
        samples = []
        for _ in range(50):
            start = time.perf_counter_ns()
            function(*arguments)
            samples.append(time.perf_counter_ns() - start)
        return statistics.median(samples)
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


def overhead(root: Path, device: str, rounds: int) -> None:
    for name, (body, size) in FUNCTIONS.items():
        definition, workload, solution = write_problem(root / f"{name}-{device}", name, body, size)
        spec = {"source": "random", "shape": [size, size], "dtype": "float32"}
        case = {"uuid": "bench", "seed": case_seed(name, "bench"), "axes": {}, "inputs": {"x": spec, "y": spec}}
        inputs = list(build_inputs(case, device, None).values())
        out = torch.empty(size, size, device=device)
        namespace: dict[str, Any] = {"torch": torch}
        exec(f"def run(x, y, out):\n    {body}\n", namespace)
        ratios, harness_ns, bare_ns = [], [], []
        for _ in range(rounds):
            bare = bare_median(namespace["run"], [*inputs, out], device)
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


def fixed_cost(root: Path, device: str, rounds: int) -> None:
    definition, workload, solution = write_problem(root / f"tiny-{device}", "tiny", "torch.add(x, y, out=out)", 1)
    walls: dict[str, list[float]] = {"sandboxed": [], "unsandboxed": [], "python -c 'import torch'": []}
    for _ in range(rounds):
        for sandbox in (True, False):
            start = time.perf_counter()
            result = evaluate(definition, workload, solution, device=device, sandbox=sandbox, warmup=0, iterations=1)
            walls["sandboxed" if sandbox else "unsandboxed"].append(time.perf_counter() - start)
            assert result.status == "PASSED", result.reason
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True, capture_output=True)
        walls["python -c 'import torch'"].append(time.perf_counter() - start)
    for label, values in walls.items():
        print(
            f"{device:5} fixed cost, {label:26} median {statistics.median(values) * 1e3:7.0f} ms "
            f"(min {min(values) * 1e3:.0f}, max {max(values) * 1e3:.0f}, {len(values)} runs)"
        )


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
    arguments = parser.parse_args()
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, devices: {', '.join(devices)}")
    if torch.cuda.is_available():
        print(f"GPU: {torch.cuda.get_device_name()}")
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as folder:
        for device in devices:
            overhead(Path(folder), device, arguments.rounds)
            fixed_cost(Path(folder), device, arguments.rounds)
        if torch.cuda.is_available():
            gpu_checks(Path(folder))


if __name__ == "__main__":
    main()
