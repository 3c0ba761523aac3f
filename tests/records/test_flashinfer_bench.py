"""FlashInfer-Bench traces: one run per solution, definition and environment, every case kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from records.errors import RecordError
from records.manifest import RunItem
from records.sources.base import SkippedItem
from records.sources.flashinfer_bench import SummaryAdapter, TraceAdapter
from tests.conftest import SAMPLE_DATA

FIB = SAMPLE_DATA / "flashinfer-bench"
GEMM = FIB / "fib_all_defs_20260317_141930/gpt-5/traces/gemm/gemm_n128_k2048.jsonl"
RMSNORM = FIB / "fib_all_defs_20260317_142116/gpt-5.2_n/traces/rmsnorm/rmsnorm_h4096.jsonl"
DSA = (
    FIB
    / "fib_all_defs_20260317_141743/gpt-5.2/traces/dsa_paged/dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64.jsonl"
)


def run_in(path: Path) -> RunItem:
    [item] = [item for item in TraceAdapter().read(path) if isinstance(item, RunItem)]
    return item


def test_all_passed_cases_make_a_passed_run_with_a_geomean_latency() -> None:
    spec = run_in(RMSNORM).run.value["spec"]
    assert spec["status"] == "passed"
    assert len(spec["cases"]) == 14
    assert spec["timing"]["primaryStatistic"] == "geomean"
    latencies = [case["latencyNs"] for case in spec["cases"]]
    assert min(latencies) < spec["timing"]["latencyNs"]["geomean"] < max(latencies)


def test_incorrect_cases_are_kept_and_fail_the_run() -> None:
    spec = run_in(GEMM).run.value["spec"]
    assert spec["status"] == "failed"
    statuses = [case["status"] for case in spec["cases"]]
    assert statuses.count("passed") == 22 and statuses.count("failed") == 3
    failed = next(case for case in spec["cases"] if case["status"] == "failed")
    assert failed["sourceStatus"] == "INCORRECT_NUMERICAL"
    assert "timing" not in spec  # a failed run has no rankable latency


def test_runtime_errors_keep_a_short_log_excerpt() -> None:
    spec = run_in(DSA).run.value["spec"]
    assert spec["status"] == "error"
    assert len(spec["cases"]) == 23
    assert all(0 < len(case["message"]) <= 600 for case in spec["cases"])


def test_the_environment_carries_gpu_and_library_versions() -> None:
    environment = run_in(GEMM).documents["environment"].value["spec"]
    assert environment["hardware"]["product"] == "NVIDIA A800-SXM4-80GB"
    assert environment["hardware"]["architecture"] == "sm_80"
    assert environment["software"]["libraries"] == {"cuda": "13.0", "torch": "2.9.1+cu130", "triton": "3.5.1"}


def test_timestamps_are_marked_utc() -> None:
    assert run_in(RMSNORM).run.value["spec"]["observedAt"].endswith("Z")


def test_two_solutions_in_one_file_are_two_runs(tmp_path: Path) -> None:
    lines = RMSNORM.read_text().splitlines()
    other = [json.loads(line) | {"solution": "another_solution"} for line in lines]
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(lines + [json.dumps(o) for o in other]) + "\n")
    runs = [item for item in TraceAdapter().read(path) if isinstance(item, RunItem)]
    assert len(runs) == 2
    assert runs[0].documents["workload"].digest == runs[1].documents["workload"].digest


def test_a_workload_twice_with_other_results_is_refused(tmp_path: Path) -> None:
    line = json.loads(RMSNORM.read_text().splitlines()[0])
    changed = json.loads(json.dumps(line))
    changed["evaluation"]["performance"]["latency_ms"] = 1.0
    path = tmp_path / "twice.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps(changed) + "\n")
    with pytest.raises(RecordError, match="also on line 1") as raised:
        list(TraceAdapter().read(path))
    assert (raised.value.line, raised.value.field) == (2, "workload.uuid")


def test_a_passed_case_without_performance_is_refused(tmp_path: Path) -> None:
    line = json.loads(RMSNORM.read_text().splitlines()[0])
    line["evaluation"]["performance"] = None
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(RecordError) as raised:
        list(TraceAdapter().read(path))
    assert (raised.value.line, raised.value.field) == (1, "evaluation.performance")


def test_the_artifact_summary_is_recognised_and_skipped() -> None:
    [item] = list(SummaryAdapter().read(FIB / "fib_all_defs_20260317_142116/gpt-5.2_n/artifact_summary.json"))
    assert isinstance(item, SkippedItem)
