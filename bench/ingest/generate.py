"""Synthetic benchmark runs for the ingest benchmark, streamed to a JSONL file.

    python bench/ingest/generate.py --runs 100000 --out bench/out/sol-100000.jsonl
    python bench/ingest/generate.py --runs 100000 --format kernelindex --out bench/out/manifests-100000.jsonl

The default format is the SOL-ExecBench leaderboard's submission record (the
`/api/submissions/<id>` poll response, one per line, without the client's
`event` and `board_*` additions), which `import_runs` reads as plain records.
`kernelindex` writes the same submissions as native canonical manifests, built
by the project's own adapter, exactly as `export_runs` would write them.

Records are written one at a time: memory does not grow with `--runs`. The same
`--seed` and `--runs` always give the same file, byte for byte.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ("sol-execbench", "kernelindex")

# Latencies span ~2 µs (a tiny elementwise kernel) to ~50 ms (a full decoder layer backward), in ms.
MIN_LATENCY_MS = 0.002
MAX_LATENCY_MS = 50.0
FIRST_SUBMISSION_ID = 20_000
FIRST_SUBMITTED_AT = datetime(2026, 3, 2, 8, 0, 0)

# What a leaderboard's lifetime of submissions looks like: mostly finished and correct.
STATUS_WEIGHTS = {"COMPLETED": 0.93, "FAILED": 0.05, "ERROR": 0.015, "TIMEOUT": 0.005}
INCORRECT_SHARE = 0.12
PRIVATE_SHARE = 0.03

ERROR_LOGS = {
    "FAILED": [
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
        'error: identifier "__nv_fp8_e4m3" is undefined\n1 error detected in the compilation of '
        '"/tmp/solution/kernel.cu".\nninja: build stopped: subcommand failed.',
        "AssertionError: output 0 mismatch: max_abs_err=0.0625 > atol=0.01 at index (3, 127, 64)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 178.35 GiB of which 1.12 GiB is free.",
    ],
    "ERROR": [
        "evaluation worker exited with code 137 (killed) while loading workload 7",
        "ImportError: cannot import name 'run' from 'solution' (/tmp/solution/__init__.py)",
    ],
    "TIMEOUT": ["evaluation exceeded the 900 s limit on workload 12 of 16"],
}

# Kernel names are built the way SOL-ExecBench's are: a subset-local index, then the operator.
MODEL_PARTS = [
    "attention", "gqa_attention", "mla_attention", "moe", "moe_expert", "mamba", "mamba2", "flux", "video_latent",
    "audio", "vision_patch", "decoder_layer", "kv_cache", "rotary", "multimodal", "sparse_moe", "convnextv2",
    "hyena", "altup", "diffusion_timestep",
]  # fmt: skip
OPERATOR_PARTS = [
    "softmax_dropout_value_matmul", "output_projection_with_reshape", "qkv_projection_with_bias", "rmsnorm_qk",
    "swiglu_with_down_projection", "gelu_activation", "conv1d_with_gating", "layernorm_with_modulation",
    "topk_routing", "score_aggregation_and_masking", "weighted_index_add_accumulation", "rope_application",
    "cos_sin_embedding_generation", "residual_coupling", "segsum_discretization", "group_limited_topk",
    "spatial_shuffle_mlp", "dispatch_and_combine", "fused_attention_mlp", "pre_norm_attention",
]  # fmt: skip
SUFFIXES = ["", "_backward", "_with_residual", "_fused", "_ultralong", "_with_softcapping"]
SUBSETS = {"L1": 110, "L2": 95, "Quant": 45, "FlashInfer-Bench": 40}


@dataclass(frozen=True)
class Kernel:
    kernel_id: int
    name: str
    latency_ms: float  # a typical good submission's latency
    workloads: int


def kernel_catalogue(rng: random.Random) -> list[Kernel]:
    """A few hundred kernels with real-looking names and latencies log-spread over 2 µs – 50 ms."""
    kernels: list[Kernel] = []
    used: set[str] = set()  # each kernel its own operator, so no two share a definition
    for subset, count in SUBSETS.items():
        stems = rng.sample([stem for stem in _kernel_stems(subset) if stem not in used], count)
        used.update(stems)
        for index, stem in enumerate(stems, start=1):
            latency = math.exp(rng.uniform(math.log(MIN_LATENCY_MS * 1.5), math.log(MAX_LATENCY_MS / 1.5)))
            kernels.append(Kernel(len(kernels) + 1, f"{index:03d}_{stem}", latency, rng.choice([4, 8, 12, 16, 24])))
    return kernels


def _kernel_stems(subset: str) -> list[str]:
    if subset == "FlashInfer-Bench":
        return (
            [f"gemm_n{n}_k{k}" for n in (128, 256, 2048, 4096, 5120, 7168, 14336) for k in (2048, 4096, 7168)]
            + [f"rmsnorm_h{h}" for h in (128, 512, 1024, 2048, 4096, 5120, 7168)]
            + [f"gqa_paged_decode_h{h}_kv{kv}_d128_ps{ps}" for h in (32, 64) for kv in (4, 8) for ps in (1, 16)]
            + [f"mla_paged_decode_h{h}_ckv512_kpe64_ps{ps}" for h in (16, 32, 64, 128) for ps in (1, 64)]
        )
    stems = [f"{model}_{op}{suffix}" for model in MODEL_PARTS for op in OPERATOR_PARTS for suffix in SUFFIXES]
    return [f"{quant}_{stem}" for quant in ("fp8", "nvfp4") for stem in stems] if subset == "Quant" else stems


def sol_submissions(runs: int, seed: int) -> Iterator[dict[str, Any]]:
    """`runs` leaderboard submission records with unique, increasing ids."""
    rng = random.Random(seed)
    kernels = kernel_catalogue(rng)
    # Some kernels draw far more submissions than others, as on a real board.
    submission_id = FIRST_SUBMISSION_ID
    submitted_at = FIRST_SUBMITTED_AT
    popularity = list(itertools.accumulate(rng.paretovariate(1.2) for _ in kernels))
    statuses, status_weights = list(STATUS_WEIGHTS), list(itertools.accumulate(STATUS_WEIGHTS.values()))
    for _ in range(runs):
        kernel = rng.choices(kernels, cum_weights=popularity)[0]
        submission_id += rng.choice((1, 1, 1, 2, 3))
        submitted_at += timedelta(seconds=rng.expovariate(1 / 40))
        status = rng.choices(statuses, cum_weights=status_weights)[0]
        yield _submission(rng, kernel, submission_id, submitted_at, status)


def _submission(rng: random.Random, kernel: Kernel, submission_id: int, submitted_at: datetime, status: str) -> dict:
    finished_at = submitted_at + timedelta(seconds=rng.uniform(20, 5400))
    correct = status == "COMPLETED" and rng.random() >= INCORRECT_SHARE
    record: dict[str, Any] = {
        "id": submission_id,
        "kernel_id": kernel.kernel_id,
        "kernel_name": kernel.name,
        "status": status,
        "submission_mode": "private" if rng.random() < PRIVATE_SHARE else "release",
        "is_correct": correct if status == "COMPLETED" else None,
        "sol_score": None,
        "latency_ms": None,
        "fast_1_count": None,
        "fast_1_total": None,
        "avg_speedup": None,
        "submitted_at": _timestamp(submitted_at),
        "finished_at": _timestamp(finished_at),
        "error_log": rng.choice(ERROR_LOGS[status]) if status in ERROR_LOGS else None,
    }
    if status == "COMPLETED":
        latency = min(max(kernel.latency_ms * rng.lognormvariate(0, 0.35), MIN_LATENCY_MS), MAX_LATENCY_MS)
        record["latency_ms"] = round(latency, 6)
        if correct:
            speedup = max(0.05, rng.lognormvariate(0.3, 0.6))
            record["sol_score"] = round(min(0.999999, speedup / (1 + speedup) * rng.uniform(0.85, 1.1)), 6)
            record["avg_speedup"] = round(speedup, 4)
            record["fast_1_total"] = kernel.workloads
            record["fast_1_count"] = min(kernel.workloads, round(kernel.workloads * min(1.0, speedup / 2)))
    return record


def _timestamp(value: datetime) -> str:
    """The source's spelling: ISO 8601 with microseconds and no offset (the values are UTC)."""
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f")


def write_sol_submissions(out: TextIO, runs: int, seed: int) -> None:
    for record in sol_submissions(runs, seed):
        out.write(json.dumps(record))
        out.write("\n")


def write_manifests(out: TextIO, runs: int, seed: int) -> None:
    """The same submissions as canonical manifests, made by the importer's own adapter."""
    sys.path.insert(0, str(ROOT))
    from records.manifest import RunItem, manifest_text
    from records.sources.sol_execbench import Submission, submission_item

    path = Path("synthetic.jsonl")
    for line, record in enumerate(sol_submissions(runs, seed), start=1):
        item = submission_item(path, line, Submission.model_validate(record))
        assert isinstance(item, RunItem)
        texts = {role: sealed.text for role, sealed in item.documents.items()}
        out.write(manifest_text(texts))
        out.write("\n")


def generate(path: Path, runs: int, seed: int = 1, kind: str = "sol-execbench") -> Path:
    """Write `runs` records to `path` (streamed) and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = write_sol_submissions if kind == "sol-execbench" else write_manifests
    with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
        writer(out, runs, seed)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, required=True, help="how many runs to write")
    parser.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    parser.add_argument("--format", choices=FORMATS, default="sol-execbench")
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    generate(options.out, options.runs, options.seed, options.format)
    print(f"{options.out}: {options.runs:,} runs, {options.out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
