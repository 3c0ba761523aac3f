"""`make run` measures the demo's claims on the machine it runs on (demo/local.py), in that CPU's own class, so
that the reruns its worker runs there judge them on the hardware they were made on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.parent.environment import HARDWARE_CLASS_VARIABLE
from records.hardware import is_cpu_class

ROOT = Path(__file__).resolve().parent.parent.parent


def measure_here(out: Path, *solutions: str) -> str:
    environment = {name: value for name, value in os.environ.items() if name != HARDWARE_CLASS_VARIABLE}
    command = [sys.executable, "demo/local.py", "--out", str(out), "--solutions", *solutions]
    completed = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, check=True)
    return completed.stdout + completed.stderr


def test_the_demo_is_measured_in_this_cpus_class_once(tmp_path: Path) -> None:
    out = tmp_path / "reported.jsonl"
    said = measure_here(out, "gemm-torch-mm", "gemm-bf16")
    runs = {json.loads(line)["run"]["spec"]["sourceNative"]["externalId"]: json.loads(line) for line in out.open()}
    assert set(runs) == {"demo/gemm_n256_k512/gemm-torch-mm", "demo/gemm_n256_k512/gemm-bf16"}
    here = subprocess.run(
        [sys.executable, "-c", "from harness.parent.environment import detect_hardware_class as d; print(d())"],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != HARDWARE_CLASS_VARIABLE},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert is_cpu_class(here) and here != "cpu"
    measured = runs["demo/gemm_n256_k512/gemm-torch-mm"]
    assert measured["environment"]["spec"]["hardware"]["class"] == here, said
    # The claim is this machine's measurement: each case's latency, its reference's, and their paired ratio.
    for case in measured["run"]["spec"]["cases"]:
        ratio = case["referenceLatencyNs"] / case["latencyNs"]
        assert 0.5 < case["speedup"] / ratio < 2
    assert runs["demo/gemm_n256_k512/gemm-bf16"]["run"]["spec"]["status"] == "failed"
    # Once: run again on the same CPU, demo and harness, it measures nothing and leaves the file as it is.
    before = out.read_bytes()
    assert "already" in measure_here(out, "gemm-torch-mm", "gemm-bf16")
    assert out.read_bytes() == before
