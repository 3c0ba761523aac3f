"""A controlled rerun as records: the harness's result turned into a manifest, and the evidence rule.

Pure Python, like the rest of `records/`: a worker builds the manifest, the
index imports it like any other, and the rule that decides a run's evidence
level is one function that the pages quote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from records.canonical import digest
from records.identity import NATIVE_SOURCE
from records.schema import REFERENCE_FIELDS, make_document

RERUN_FAMILY = "kernelindex_harness"
PRIMARY_STATISTIC = "median"

# The harness's statuses, by what they say about the kernel that was rerun.
PASSED = "PASSED"
KERNEL_FAULTS = frozenset(
    {
        "INCORRECT_SHAPE",
        "INCORRECT_NUMERICAL",
        "INCORRECT_DTYPE",
        "REWARD_HACK",
        "RUNTIME_ERROR",
        "COMPILE_ERROR",
        "TIMEOUT",
        "OUT_OF_MEMORY",
    }
)
# A run document's status for each harness status; anything else (INVALID_REFERENCE, an unknown
# status) is an error of the evaluation, not of the kernel.
RUN_STATUS = {
    PASSED: "passed",
    "INCORRECT_SHAPE": "failed",
    "INCORRECT_NUMERICAL": "failed",
    "INCORRECT_DTYPE": "failed",
    "REWARD_HACK": "failed",
    "TIMEOUT": "timeout",
}

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not_reproduced"
INCONCLUSIVE = ""

EVIDENCE_RULE = (
    "The latest conclusive KernelIndex rerun on the run's own hardware class decides its evidence level: "
    "reproduced when every case passes and the rerun's median is within {tolerance} of the reported figure, "
    "or the reported figure lies inside the rerun's 95 % interval; not reproduced when a case fails "
    "(wrong results, an error, a timeout, memory) or the figure is outside both. Reruns on other hardware "
    "are shown and change nothing; community notes never do."
)


@dataclass(frozen=True)
class Verdict:
    level: str  # REPRODUCED, NOT_REPRODUCED or INCONCLUSIVE
    reason: str


def verdict(reported_ns: float | None, result: dict[str, Any], tolerance: float) -> Verdict:
    """What one rerun says about the reported figure (see EVIDENCE_RULE)."""
    status = result.get("status")
    if status in KERNEL_FAULTS:
        return Verdict(NOT_REPRODUCED, f"the rerun ended {status}: {result.get('reason') or 'no reason given'}")
    if status != PASSED:
        return Verdict(INCONCLUSIVE, f"the rerun could not judge the kernel ({status})")
    latency = result.get("latency") or {}
    median = latency.get("median_ns")
    if reported_ns is None or not median:
        return Verdict(INCONCLUSIVE, "there is no reported latency to compare with")
    low, high = _interval(latency.get("ci95_ns"), median)
    ratio = median / reported_ns
    if abs(ratio - 1) <= tolerance or low <= reported_ns <= high:
        return Verdict(REPRODUCED, f"every case passed; the rerun's median is {ratio:.2f}× the reported figure")
    return Verdict(
        NOT_REPRODUCED,
        f"every case passed, but the rerun's median is {ratio:.2f}× the reported figure "
        f"(outside ±{tolerance:.0%} and outside its 95 % interval)",
    )


def _interval(value: Any, median: float) -> tuple[float, float]:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return float(value[0]), float(value[1])
    return median, median


# -- the result as a manifest -------------------------------------------------


@dataclass(frozen=True)
class RerunOf:
    run_id: str
    digest: str
    definition: str
    request_id: int


def rerun_external_id(of: RerunOf) -> str:
    return f"rerun/{of.run_id}/{of.request_id}"


def rerun_manifest(
    of: RerunOf,
    result: dict[str, Any],
    *,
    workload: dict[str, Any],
    implementation: dict[str, Any],
    observed_at: str,
) -> dict[str, Any]:
    """A native manifest for the harness's result: its own protocol and environment, the original's
    workload and implementation, the per-case results, and `rerunOf` naming the original."""
    protocol = rerun_protocol(result)
    environment = rerun_environment(result)
    hardware = environment["spec"]["hardware"]["product"]
    spec: dict[str, Any] = {
        "status": RUN_STATUS.get(str(result.get("status")), "error"),
        "observedAt": observed_at,
        "rerunOf": {"runId": of.run_id, "digest": of.digest},
        "sourceNative": {
            "source": NATIVE_SOURCE,
            "externalId": rerun_external_id(of),
            "metrics": {"harnessStatus": str(result.get("status"))},
        },
        "cases": [_case(case) for case in result.get("cases") or []],
    }
    if result.get("reason"):
        spec["reason"] = str(result["reason"])[-2000:]
    timing = _timing(result.get("latency"))
    if timing and spec["status"] == "passed":
        spec["timing"] = timing
    run = make_document(
        "BenchmarkRun",
        f"rerun-{of.run_id}-{of.request_id}",
        spec,
        title=f"Rerun of {of.run_id} · {of.definition} · {hardware}",
        labels={"rerunOf": of.run_id},
    )
    documents = {
        "protocol": protocol,
        "environment": environment,
        "workload": workload,
        "implementation": implementation,
    }
    for role, document in documents.items():
        spec[REFERENCE_FIELDS[role]] = digest(document)
    return {"run": run, **documents}


def _timing(latency: dict[str, Any] | None) -> dict[str, Any] | None:
    if not latency or not latency.get("median_ns"):
        return None
    values = {
        name: latency[f"{name}_ns"]
        for name in ("median", "mean", "min", "max", "stdev")
        if isinstance(latency.get(f"{name}_ns"), (int, float))
    }
    interval = latency.get("ci95_ns")
    if isinstance(interval, (list, tuple)) and len(interval) == 2:
        values["ci95Low"], values["ci95High"] = interval
    timing: dict[str, Any] = {"latencyNs": values, "primaryStatistic": PRIMARY_STATISTIC}
    if isinstance(latency.get("n"), int):
        timing["samples"] = latency["n"]
    return timing


def _case(case: dict[str, Any]) -> dict[str, Any]:
    """A case as run documents spell cases (as FlashInfer-Bench traces are imported): the run status,
    the harness's own status beside it, the latencies, the errors, and the reason it failed."""
    harness_status = str(case.get("status") or "UNKNOWN")
    row: dict[str, Any] = {"status": RUN_STATUS.get(harness_status, "error"), "sourceStatus": harness_status}
    if case.get("uuid"):
        row["workload"] = str(case["uuid"])
    latency = case.get("latency") or {}
    if latency.get("median_ns"):
        row["latencyNs"] = latency["median_ns"]
        row["timing"] = _timing(latency)
    reference = case.get("reference_latency") or {}
    if reference.get("median_ns"):
        row["referenceLatencyNs"] = reference["median_ns"]
    for source_key, key in (("max_abs_error", "maxAbsoluteError"), ("max_rel_error", "maxRelativeError")):
        value = case.get(source_key)
        if isinstance(value, (int, float)) and value == value and abs(value) != float("inf"):
            row[key] = value
    if case.get("reason"):
        row["message"] = str(case["reason"])[-1000:]
    return row


def rerun_protocol(result: dict[str, Any]) -> dict[str, Any]:
    harness = result.get("harness") or {}
    protocol = result.get("protocol") or {}
    name = str(harness.get("name") or "kernelindex-harness")
    version = str(harness.get("version") or "unknown")
    measurement = {
        "timer": str(protocol.get("timer") or "unknown"),
        "primaryStatistic": PRIMARY_STATISTIC,
        "warmupIterations": protocol.get("warmup"),
        "timedIterations": protocol.get("iterations"),
        "l2Flush": protocol.get("l2_flush"),
    }
    return make_document(
        "BenchmarkProtocol",
        f"kernelindex-harness-{version}-{measurement['timer']}".replace("_", "-").lower(),
        {
            "harness": {"name": name, "version": version, "digest": harness.get("digest")},
            "measurement": {key: value for key, value in measurement.items() if value is not None},
            "correctness": {
                "reference": "definition reference implementation",
                "comparator": "shape and dtype equal; no NaN or Inf; |out − ref| ≤ atol + rtol·|ref| per case",
            },
            "comparability": {
                "family": RERUN_FAMILY,
                "notes": "A controlled KernelIndex rerun in a sandbox: the reference and the solution timed alike, "
                "median of the timed iterations per case, geometric mean over cases.",
            },
        },
        title=f"KernelIndex harness {version}",
    )


def rerun_environment(result: dict[str, Any]) -> dict[str, Any]:
    captured = dict(result.get("environment") or {})
    hardware = dict(captured.pop("hardware", None) or {})
    hardware.setdefault("vendor", "unknown")
    hardware.setdefault("product", str(captured.get("device_name") or "CPU"))
    hardware.setdefault("class", str(captured.get("hardware_class") or "cpu"))
    libraries = {name: str(version) for name, version in (captured.get("libraries") or {}).items() if version}
    libraries |= {name: str(captured[name]) for name in ("cuda", "driver", "python") if captured.get(name)}
    spec = {"hardware": hardware, "software": {"libraries": libraries}, "captured": captured}
    return make_document(
        "ExecutionEnvironment",
        f"kernelindex-{hardware['class']}",
        spec,
        title=f"KernelIndex {hardware['product']}",
    )
