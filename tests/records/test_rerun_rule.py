"""The evidence rule and the rerun's manifest, on plain values."""

from __future__ import annotations

from typing import Any

import pytest

from records.manifest import manifest_item
from records.rerun import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, RerunOf, rerun_manifest, verdict
from records.schema import make_document
from records.summary import summarize


def result(
    status: str = "PASSED", median: float = 1000.0, interval: tuple[float, float] = (990, 1010)
) -> dict[str, Any]:
    latency = {
        "median_ns": median,
        "mean_ns": median,
        "min_ns": median * 0.9,
        "max_ns": median * 1.2,
        "stdev_ns": 5.0,
        "ci95_ns": list(interval),
        "n": 50,
    }
    return {
        "status": status,
        "reason": "" if status == "PASSED" else "case 1: max abs error 0.01 at [0, 3]",
        "latency": latency if status == "PASSED" else None,
        "cases": [
            {
                "uuid": "c1",
                "status": status,
                "reason": "" if status == "PASSED" else "case 1: max abs error 0.01 at [0, 3]",
                "max_abs_error": 0.0,
                "max_rel_error": 0.0,
                "latency": latency if status == "PASSED" else None,
            }
        ],
        "environment": {
            "hardware": {"vendor": "intel", "product": "Intel Xeon", "class": "cpu"},
            "libraries": {"torch": "2.13.0"},
        },
        "harness": {"name": "kernelindex-harness", "version": "1.0", "digest": "sha256:" + "a" * 64},
        "protocol": {"warmup": 10, "iterations": 50, "timer": "perf_counter_ns", "l2_flush": "none (cpu)"},
    }


def test_a_rerun_within_the_tolerance_reproduces() -> None:
    assert verdict(1080.0, result(median=1000), 0.10).level == REPRODUCED
    assert verdict(920.0, result(median=1000), 0.10).level == REPRODUCED


def test_a_reported_figure_the_rerun_cannot_approach_is_not_reproduced() -> None:
    decided = verdict(50.0, result(median=1000), 0.10)
    assert decided.level == NOT_REPRODUCED
    assert "20.00× the reported figure" in decided.reason


def test_a_figure_inside_the_rerun_interval_reproduces_even_beyond_the_tolerance() -> None:
    assert verdict(1400.0, result(median=1000, interval=(800, 1500)), 0.10).level == REPRODUCED


@pytest.mark.parametrize("status", ["INCORRECT_NUMERICAL", "REWARD_HACK", "TIMEOUT", "OUT_OF_MEMORY", "RUNTIME_ERROR"])
def test_a_failing_kernel_is_not_reproduced(status: str) -> None:
    decided = verdict(1000.0, result(status), 0.10)
    assert decided.level == NOT_REPRODUCED
    assert status in decided.reason


def test_an_evaluation_that_could_not_judge_the_kernel_decides_nothing() -> None:
    assert verdict(1000.0, result("INVALID_REFERENCE"), 0.10).level == INCONCLUSIVE
    assert verdict(None, result(), 0.10).level == INCONCLUSIVE


def test_the_result_is_a_native_manifest_linked_to_the_original() -> None:
    workload = make_document("Workload", "demo-rmsnorm", {"definition": {"source": "kernelindex", "name": "rmsnorm"}})
    implementation = make_document("Implementation", "rmsnorm-fast", {"name": "rmsnorm-fast"})
    of = RerunOf("abcdef123456", "sha256:" + "b" * 64, "rmsnorm", 7)
    manifest = rerun_manifest(
        of, result(median=1234), workload=workload, implementation=implementation, observed_at="2026-12-01T10:00:00Z"
    )
    summary = summarize(manifest_item(manifest, _path(), None, redigest=False))
    assert summary.source == "kernelindex"
    assert summary.external_id == "rerun/abcdef123456/7"
    assert summary.status == "passed"
    assert summary.primary_statistic == "median"
    assert summary.latency_ns == 1234
    assert summary.group.family == "kernelindex_harness"
    assert manifest["run"]["spec"]["rerunOf"] == {"runId": "abcdef123456", "digest": "sha256:" + "b" * 64}
    assert manifest["environment"]["spec"]["hardware"]["class"] == "cpu"
    assert manifest["environment"]["spec"]["software"]["libraries"]["torch"] == "2.13.0"


def test_a_failed_rerun_is_a_failed_run_without_timing() -> None:
    workload = make_document("Workload", "demo-rmsnorm", {"definition": {"source": "kernelindex", "name": "rmsnorm"}})
    implementation = make_document("Implementation", "rmsnorm-wrong", {"name": "rmsnorm-wrong"})
    manifest = rerun_manifest(
        RerunOf("abcdef123456", "sha256:" + "b" * 64, "rmsnorm", 8),
        result("INCORRECT_NUMERICAL"),
        workload=workload,
        implementation=implementation,
        observed_at="2026-12-01T10:00:00Z",
    )
    summary = summarize(manifest_item(manifest, _path(), None, redigest=False))
    assert summary.status == "failed"
    assert summary.latency_ns is None
    case = manifest["run"]["spec"]["cases"][0]
    # Spelled as imported cases are, so the result run's own page shows them in its per-case table.
    assert (case["status"], case["sourceStatus"]) == ("failed", "INCORRECT_NUMERICAL")
    assert case["message"] == "case 1: max abs error 0.01 at [0, 3]"


def _path() -> Any:
    from pathlib import Path

    return Path("rerun:test")
