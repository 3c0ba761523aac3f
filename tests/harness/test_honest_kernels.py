"""No honest kernel is flagged: every correct demo solution passes the judge, its clock check included."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import evaluate
from tests.harness.conftest import run_harness, write_problem, write_solution

DEMO = Path(__file__).resolve().parents[2] / "demo"
HONEST = [
    ("rmsnorm_h2048", "rmsnorm-vectorised"),
    ("rmsnorm_h2048", "rmsnorm-row-loop"),
    ("softmax_h8", "softmax-fused"),
    ("softmax_h8", "softmax-row-loop"),
    ("swiglu_mlp_h256_i512", "swiglu-in-place"),
    ("swiglu_mlp_h256_i512", "swiglu-per-token"),
    ("gemm_n256_k512", "gemm-torch-mm"),
    ("gemm_n256_k512", "gemm-row-loop"),
]


@pytest.mark.parametrize(("definition", "solution"), HONEST, ids=[name for _, name in HONEST])
def test_an_honest_demo_kernel_passes(definition: str, solution: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # As reruns run on the CPU: one thread, so the CPU quota the clock check rests on is one CPU.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    folder = DEMO / "definitions" / definition

    result = evaluate(
        folder / "definition.json",
        folder / "workload.jsonl",
        DEMO / "solutions" / definition / solution / "solution.json",
        warmup=2,
        iterations=20,
        timeout=240,
    )

    assert result.status == "PASSED", result.reason
    assert all(case.latency is not None and case.speedup is not None for case in result.cases)
    if result.limits.clock_check != "none":
        assert result.limits.cpus == 1


def test_a_kernel_whose_helper_spins_between_calls_passes_where_it_may_use_every_cpu(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The worst a thread pool does (OpenMP's workers spin after each call, and a request that stalls leaves them
    # spinning through it): a helper process that never stops spinning. With several CPUs the kernel may keep
    # them busy while it is not in a call; the judge measures it, and it is no lie about the calls' times.
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    solution = write_solution(
        tmp_path / "s",
        """
        import os
        import torch

        _helpers = []

        def _spin():
            value = 0
            while True:
                value = (value * 31 + 7) % 1000003

        def run(x, y, out):
            if not _helpers:
                _helpers.append(os.fork())
                if _helpers[0] == 0:
                    _spin()
            torch.add(x, y, out=out)
        """,
    )

    result = run_harness(write_problem(tmp_path / "problem"), solution)

    assert result.status == "PASSED", result.reason
