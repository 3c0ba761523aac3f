"""The demo through the real harness, sandboxed as a rerun runs it: every format it uses is read, and the verdicts
a rerun will reach are the ones the demo was made for.

The wrong solution of each definition, and the naive one whose run claims to be 20 times faster than it is:
between them they cover the reference inline and in reference.py, an expression axis, a scalar input, custom
inputs, cases wrapped as traces, and solutions that write into their outputs and that return them. Each
evaluation starts a sandboxed process that imports torch, so the other seven solutions are left to
tests/demo/test_kernels.py, which checks all twelve without the harness.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import evaluate

DEMO = Path(__file__).resolve().parent.parent.parent / "demo"
CHECKED = {
    "rmsnorm_h2048/rmsnorm-row-loop": "PASSED",
    "rmsnorm_h2048/rmsnorm-eps-1e-2": "INCORRECT_NUMERICAL",
    "softmax_h8/softmax-exp2": "INCORRECT_NUMERICAL",
    "swiglu_mlp_h256_i512/swiglu-gelu": "INCORRECT_NUMERICAL",
    "gemm_n256_k512/gemm-bf16": "INCORRECT_NUMERICAL",
}


def reported_median(name: str) -> float:
    for line in (DEMO / "runs" / "reported.jsonl").read_text().splitlines():
        manifest = json.loads(line)
        if manifest["run"]["spec"]["sourceNative"]["externalId"] == f"demo/{name}":
            return float(manifest["run"]["spec"]["timing"]["latencyNs"]["median"])
    raise AssertionError(f"no reported run for {name}")


@pytest.mark.parametrize(("name", "status"), CHECKED.items())
def test_a_rerun_reaches_the_verdict_the_demo_expects(name: str, status: str) -> None:
    definition = DEMO / "definitions" / name.split("/")[0]
    solution = DEMO / "solutions" / name / "solution.json"
    result = evaluate(definition, definition / "workload.jsonl", solution, device="cpu", warmup=1, iterations=5)
    assert result.status == status, result.reason
    assert len(result.cases) == 3
    if name == "rmsnorm_h2048/rmsnorm-row-loop":
        # Reported 20 times faster than it runs: a rerun measures it far slower (a machine under load only adds).
        assert result.latency is not None
        assert result.latency.median_ns > 5 * reported_median(name)
