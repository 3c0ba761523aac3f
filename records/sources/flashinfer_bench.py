"""FlashInfer-Bench evaluation traces: one JSON line per (solution, workload).

Lines are grouped into one run per (solution, definition, environment); every
case is kept with its status, failed ones included. A run passes only when
every case passed; its primary latency is the geometric mean over its cases.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from records.errors import RecordError
from records.hardware import hardware_spec
from records.identity import definition_title
from records.manifest import RunItem, Sealed, assemble
from records.schema import NonNegative, make_document, slugify_name
from records.sources.base import (
    Item,
    NonEmpty,
    PositiveMs,
    Progress,
    SkippedItem,
    SourceRecord,
    iter_json_lines,
    ms_to_ns,
    read_json_file,
    seal_or_fail,
    utc_timestamp,
    validate_record,
)

SOURCE = "flashinfer-bench"
# Worst first: a run takes the status of its worst case.
STATUS_SEVERITY = {"error": 3, "timeout": 2, "failed": 1, "passed": 0}
MESSAGE_LIMIT = 600


class TraceEnvironment(SourceRecord):
    hardware: NonEmpty
    libs: dict[str, str] = {}


class Correctness(SourceRecord):
    max_relative_error: NonNegative | None = None
    max_absolute_error: NonNegative | None = None


class Performance(SourceRecord):
    latency_ms: PositiveMs
    reference_latency_ms: PositiveMs | None = None
    speedup_factor: NonNegative | None = None


class Evaluation(SourceRecord):
    status: NonEmpty
    environment: TraceEnvironment
    timestamp: NonEmpty
    log: str = ""
    correctness: Correctness | None = None
    performance: Performance | None = None


class TraceWorkload(SourceRecord):
    uuid: NonEmpty
    axes: dict[str, Any] = {}


class TraceLine(SourceRecord):
    definition: NonEmpty
    workload: TraceWorkload
    solution: NonEmpty
    evaluation: Evaluation


def case_status(status: str) -> str:
    """PASSED -> passed; INCORRECT_* -> failed; TIMEOUT -> timeout; any other error -> error."""
    upper = status.upper()
    if upper == "PASSED":
        return "passed"
    if upper.startswith("INCORRECT"):
        return "failed"
    if "TIMEOUT" in upper:
        return "timeout"
    return "error"


@dataclass
class RunGroup:
    first_line: int
    definition: str
    solution: str
    environment: TraceEnvironment
    cases: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    latest: str = ""


class TraceAdapter:
    name = SOURCE

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        groups: dict[tuple[str, str, str], RunGroup] = {}
        for line, value in iter_json_lines(path, progress):
            trace = validate_record(TraceLine, value, path, line)
            environment = trace.evaluation.environment
            key = (trace.solution, trace.definition, environment.model_dump_json())
            group = groups.setdefault(key, RunGroup(line, trace.definition, trace.solution, environment))
            case = _case(trace, path, line)
            uuid = trace.workload.uuid
            if uuid in group.cases and group.cases[uuid][1] != case:
                raise RecordError(
                    path,
                    line,
                    "workload.uuid",
                    f"workload {uuid} of {trace.solution} is also on line {group.cases[uuid][0]} with other results",
                )
            group.cases.setdefault(uuid, (line, case))
            group.latest = max(group.latest, utc_timestamp(trace.evaluation.timestamp))
        for group in groups.values():
            yield _run_item(group, path)


def _case(trace: TraceLine, path: Path, line: int) -> dict[str, Any]:
    evaluation = trace.evaluation
    status = case_status(evaluation.status)
    case: dict[str, Any] = {"workload": trace.workload.uuid, "axes": trace.workload.axes, "status": status}
    if evaluation.status != status.upper():
        case["sourceStatus"] = evaluation.status
    performance = evaluation.performance
    if status == "passed" and performance is None:
        raise RecordError(path, line, "evaluation.performance", "a PASSED case needs its latency")
    if performance is not None:
        case["latencyNs"] = ms_to_ns(performance.latency_ms)
        if performance.reference_latency_ms is not None:
            case["referenceLatencyNs"] = ms_to_ns(performance.reference_latency_ms)
        if performance.speedup_factor is not None:
            case["speedup"] = performance.speedup_factor
    if evaluation.correctness is not None:
        if evaluation.correctness.max_absolute_error is not None:
            case["maxAbsoluteError"] = evaluation.correctness.max_absolute_error
        if evaluation.correctness.max_relative_error is not None:
            case["maxRelativeError"] = evaluation.correctness.max_relative_error
    if status != "passed":
        case["message"] = _log_tail(evaluation.log)
    return case


def _log_tail(log: str) -> str:
    """The last lines of a build/run log: where the error usually is."""
    lines = [line for line in log.strip().splitlines() if line.strip()]
    tail = "\n".join(lines[-3:])
    return tail[-MESSAGE_LIMIT:]


def _run_item(group: RunGroup, path: Path) -> RunItem:
    cases = [case for _, case in group.cases.values()]
    status = max((case["status"] for case in cases), key=STATUS_SEVERITY.__getitem__)
    environment = seal_or_fail(_environment(group.environment), "environment", path, group.first_line)
    external_id = f"{group.definition}/{group.solution}/{environment.digest[7:19]}"
    workload = make_document(
        "Workload",
        slugify_name(f"flashinfer-bench-{group.definition}-{len(cases)}-cases"),
        {
            "definition": {"source": SOURCE, "name": group.definition},
            "cases": sorted(({"uuid": c["workload"], "axes": c["axes"]} for c in cases), key=lambda c: c["uuid"]),
        },
        title=definition_title(group.definition),
    )
    implementation = make_document(
        "Implementation", slugify_name(group.solution), {"name": group.solution, "artifacts": []}, title=group.solution
    )
    spec: dict[str, Any] = {
        "status": status,
        "observedAt": group.latest,
        "sourceNative": {
            "source": SOURCE,
            "benchmark": group.definition,
            "externalId": external_id,
            "solution": group.solution,
            "metrics": _metrics(cases),
        },
        "cases": cases,
    }
    if status == "passed":
        latency = [case["latencyNs"] for case in cases]
        spec["timing"] = {"latencyNs": {"geomean": _geometric_mean(latency)}, "primaryStatistic": "geomean"}
    run = make_document(
        "BenchmarkRun",
        slugify_name(f"fib-{group.definition}-{group.solution}")[:200],
        spec,
        title=f"{group.solution} · {group.definition} · {group.environment.hardware}",
    )
    references = {
        "protocol": flashinfer_protocol(),
        "environment": environment,
        "workload": seal_or_fail(workload, "workload", path, group.first_line),
        "implementation": seal_or_fail(implementation, "implementation", path, group.first_line),
    }
    return assemble(path, group.first_line, run, references, id_field="solution")


def _metrics(cases: list[dict[str, Any]]) -> dict[str, Any]:
    passed = [case for case in cases if case["status"] == "passed"]
    metrics: dict[str, Any] = {"cases": len(cases), "passed_cases": len(passed)}
    speedups = [case["speedup"] for case in passed if case.get("speedup")]
    if speedups and len(passed) == len(cases):
        metrics["geomean_speedup"] = round(_geometric_mean(speedups), 6)
    return metrics


def _geometric_mean(values: list[float]) -> float:
    return round(math.exp(sum(math.log(v) for v in values) / len(values)), 3)


def _environment(environment: TraceEnvironment) -> dict[str, Any]:
    libraries = dict(sorted(environment.libs.items()))
    versions = ", ".join(f"{name} {version}" for name, version in libraries.items())
    return make_document(
        "ExecutionEnvironment",
        slugify_name(f"flashinfer-bench-{environment.hardware}-{versions}")[:200],
        {"hardware": hardware_spec(environment.hardware), "software": {"libraries": libraries}},
        title=f"{environment.hardware}" + (f" ({versions})" if versions else ""),
    )


@lru_cache(maxsize=1)
def flashinfer_protocol() -> Sealed:
    document = make_document(
        "BenchmarkProtocol",
        "flashinfer-bench-trace",
        {
            "harness": {"name": "FlashInfer-Bench", "version": "unversioned"},
            "measurement": {"timer": "cuda_events", "primaryStatistic": "geomean"},
            "correctness": {"reference": "definition reference implementation", "comparator": "flashinfer_bench_eval"},
            "comparability": {
                "family": "flashinfer_bench_trace",
                "notes": "Per-workload latency from FlashInfer-Bench traces; the run's latency is the geometric "
                "mean over its cases. Comparable only on the same cases and GPU.",
            },
        },
        title="FlashInfer-Bench evaluation",
    )
    return seal_or_fail(document, "protocol", Path(SOURCE), None)


class SummaryAdapter:
    """artifact_summary.json is derived from the traces beside it: nothing new to import."""

    name = SOURCE

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        document = read_json_file(path)
        if not looks_like_summary(document):
            raise RecordError(path, None, None, "not a FlashInfer-Bench artifact summary")
        yield SkippedItem(None, "a FlashInfer-Bench artifact summary is derived from its traces; import the traces")


def looks_like_trace(record: Any) -> bool:
    return isinstance(record, dict) and {"definition", "solution", "evaluation"} <= record.keys()


def looks_like_summary(document: Any) -> bool:
    return isinstance(document, dict) and {"summary", "per_definition"} <= document.keys()
