"""Sentences and rows a run page shows, read from the run's documents.

Each function takes a document read through its kind's model (records.schema, by `typed`) and needs no
database, so the page, the compare view and the JSON twins say the same thing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeGuard, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from records.hardware import CLASSES, hardware_class_of, is_cpu_class
from records.schema import (
    CaseResult,
    EnvironmentSpec,
    ImplementationSpec,
    Metadata,
    Open,
    ProtocolSpec,
    RunSpec,
    WorkloadSpec,
)
from records.sources import default_revision, display_external_id
from runs.models import STATUS_LABELS, Run

# What a comparator checks, for protocols that name one but publish no policy text.
COMPARATOR_DESCRIPTIONS = {
    "sol_execbench_eval": "Correctness must pass on every case in the SOL evaluation stack.",
    "flashinfer_bench_eval": "Each case is checked against the definition's reference implementation; "
    "the run passes only when every case passes.",
    "none": "A timing of the reference implementation itself; there is nothing to check it against.",
}


SpecT = TypeVar("SpecT", bound=Open)


@dataclass(frozen=True)
class Record(Generic[SpecT]):
    """A stored document read through its kind's models: what the pages read, by attribute."""

    metadata: Metadata
    spec: SpecT


def typed(document: Mapping[str, Any] | None, model: type[SpecT]) -> Record[SpecT] | None:
    """A stored document as its kind's spec model (records.schema.SPEC_MODELS); None for a document not stored.

    Every stored document passed these same models when it was sealed (records.manifest.seal), so reading
    it again cannot fail; a page parses each of its documents once and hands the records on.
    """
    if not document:
        return None
    return Record(Metadata.model_validate(document["metadata"]), model.model_validate(document["spec"]))


def read(document: Mapping[str, Any], model: type[SpecT]) -> SpecT:
    """The spec of a document a page cannot be without (its run), as its kind's model."""
    return model.model_validate(document["spec"])


def spec_of(record: Record[SpecT] | None) -> SpecT | None:
    return record.spec if record else None


def extra(model: BaseModel | None, name: str) -> Any:
    """A field a record keeps without its model declaring it (records.schema.Open): a timing's `trials`,
    a hardware's `class`, an implementation's `solution`; None where it is absent."""
    if model is None or not model.model_extra:
        return None
    return model.model_extra.get(name)


def native_metrics(run: RunSpec | None) -> dict[str, Any]:
    """The source's own figures for a run (`sourceNative.metrics`), or none."""
    return run.sourceNative.metrics if run and run.sourceNative else {}


def format_ratio(value: float | str | None) -> str:
    """6.6 -> '6.60×'; a missing value (None or '' in a template) -> '—'."""
    return f"{value:.2f}×" if _is_number(value) else "—"


def format_latency(ns: float | str | None) -> str:
    """175457 -> '175.5 µs'; 12125 -> '12.1 µs'; 2660000 -> '2.66 ms'; 850 -> '850 ns'; a missing value -> '—'."""
    if not _is_number(ns):
        return "—"
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.1f} µs"
    if ns < 1_000_000_000:
        ms = ns / 1_000_000
        return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"
    return f"{ns / 1_000_000_000:.2f} s"


def format_score(score: float | str | None) -> str:
    """A source's own score (SOL-ExecBench's SOL score, in [0, 1]) to 4 places: 0.32561 -> '0.3256'; missing -> '—'."""
    return f"{score:.4f}" if _is_number(score) else "—"


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def source_native_summary(run: RunSpec) -> str:
    """'SOL 0.3256 · 0.55× reference · 0/16 cases faster' — the source's own headline numbers."""
    metrics = native_metrics(run)
    parts: list[str] = []
    if "sol_score" in metrics:
        parts.append(f"SOL {format_score(metrics['sol_score'])}")
    if "avg_speedup" in metrics:
        parts.append(f"{format_ratio(metrics['avg_speedup'])} reference")
    if "fast_1_count" in metrics and "fast_1_total" in metrics:
        parts.append(f"{metrics['fast_1_count']}/{metrics['fast_1_total']} cases faster")
    if "passed_cases" in metrics and "cases" in metrics:
        parts.append(f"{metrics['passed_cases']}/{metrics['cases']} cases passed")
    if "geomean_speedup" in metrics:
        parts.append(f"{format_ratio(metrics['geomean_speedup'])} reference (geometric mean)")
    trials = extra(run.timing, "trials")
    if trials:
        parts.append(f"{trials} trials")
    return " · ".join(parts)


def source_native_notes(run: RunSpec) -> list[str]:
    """What the summary's figures mean where a reader could take them for another, said beside the summary:
    the summary line itself is the seed page's, word for word (issue #24)."""
    if "avg_speedup" in native_metrics(run):
        # SOL-ExecBench averages the per-case speedups: it is not the ratio of the suite latencies shown beside it.
        return ["× reference: the mean of per-case speedups, not the ratio of the latencies."]
    return []


def case_count(run: RunSpec, workload: WorkloadSpec | None, definition_cases: int) -> int | None:
    """How many cases the measurement covers, from the best source that says."""
    if run.cases:
        return len(run.cases)
    if workload and workload.cases:
        return len(workload.cases)
    total = native_metrics(run).get("fast_1_total")
    if isinstance(total, int) and total > 0:
        return total
    return definition_cases or None


def workload_line(cases: int | None, statistic: str) -> str:
    """'suite of 16 cases · mean latency'."""
    if cases is None:
        return f"{statistic} latency"
    if cases == 1:
        return f"single case · {statistic} latency"
    return f"suite of {cases} cases · {statistic} latency"


def correctness_sentence(run: RunSpec, protocol: ProtocolSpec | None, evidence: str, *, by_rerun: bool = False) -> str:
    """What is known about the run's correctness, and who established it (`by_rerun`: a KernelIndex rerun's
    own result, which no source reported)."""
    status: str = run.status  # a run status, compared with Run.Status (a str enum)
    policy = extra(protocol.correctness, "policy") if protocol else None
    comparator = comparator_of(protocol)
    cases = run.cases or []
    if evidence == Run.Evidence.REPRODUCED:
        return f"{Run.Evidence.REPRODUCED.label} by a KernelIndex-controlled rerun within the stated tolerance."
    if evidence == Run.Evidence.NOT_REPRODUCED:
        return f"{Run.Evidence.NOT_REPRODUCED.label}: a KernelIndex-controlled rerun disagreed or failed correctness."
    if status == Run.Status.MEASURED or comparator == "none":
        return "Not checked: this run times the reference implementation itself."
    if cases:
        passed = sum(1 for case in cases if case.status == Run.Status.PASSED)
        verdict = (Run.Status.PASSED if status == Run.Status.PASSED else Run.Status.FAILED).label
        who = "as the KernelIndex rerun measured it" if by_rerun else "as reported by the source"
        return f"{verdict}: {passed} of {len(cases)} cases passed, {who}."
    # What the source marked a run it published no cases for, as a sentence.
    marked: dict[str, str] = {
        Run.Status.PASSED: "Marked passed",
        Run.Status.FAILED: "Marked failed",
        Run.Status.ERROR: "Marked as an error",
        Run.Status.TIMEOUT: "Marked as timed out",
    }
    verdict = marked.get(status, "Reported")
    suffix = "" if policy else "; the correctness policy was not published"
    return f"{verdict} by the source{suffix}."


def comparator_of(protocol: ProtocolSpec | None) -> str:
    """The comparator a protocol checks correctness with ('none' for a timing of the reference), or ''."""
    return protocol.correctness.comparator if protocol else ""


def comparator_description(protocol: ProtocolSpec | None) -> str:
    description = extra(protocol.correctness, "description") if protocol else None
    return description or COMPARATOR_DESCRIPTIONS.get(comparator_of(protocol), "")


def environment_hardware(environment: EnvironmentSpec | None) -> str:
    """'NVIDIA B200 (sm_100)', 'CPU · AMD EPYC': the hardware label (hardware_label) of an Environment document."""
    hardware = environment.hardware if environment else None
    label = hardware_label(
        hardware.product if hardware else "",
        str(extra(hardware, "class") or ""),
        str(extra(hardware, "model") or ""),
    )
    architecture = hardware.architecture if hardware else None
    return f"{label} ({architecture})" if architecture and architecture not in label else label


def harness_line(protocol: ProtocolSpec) -> str:
    return f"{protocol.harness.name} {protocol.harness.version}".strip()


def protocol_rows(record: Record[ProtocolSpec] | None) -> list[tuple[str, str]]:
    """The protocol's facts: its title (which names the harness and protocol that measured the run, a
    KernelIndex rerun's included), harness, timer, statistic, correctness reference, comparability family."""
    if record is None:
        return []
    protocol = record.spec
    comparability = protocol.comparability
    harness = harness_line(protocol)
    title = record.metadata.title or ""
    # The seed page's labels, as it spells them (issue #24); the rows it does not have are labelled in words.
    rows = [
        ("protocol", title if title != harness else ""),  # a title that only repeats the harness is left out
        ("harness", harness),
        ("timer", protocol.measurement.timer),
        ("primaryStatistic", protocol.measurement.primaryStatistic),
        ("correctnessReference", protocol.correctness.reference),
        ("comparabilityFamily", comparability.family),
    ]
    if comparability.notes:
        rows.append(("notes", comparability.notes))
    return [(key, value) for key, value in rows if value]


def environment_rows(environment: Record[EnvironmentSpec] | None) -> list[tuple[str, str]]:
    spec = spec_of(environment)
    # "gpu", as the seed page labels its hardware, where the hardware is one; else (a CPU host) "hardware".
    hardware = spec.hardware if spec else None
    product = hardware.product if hardware else ""
    is_gpu = not is_cpu_class(str(extra(hardware, "class") or "") or hardware_class_of(product))
    rows = [("gpu" if is_gpu else "hardware", environment_hardware(spec))]
    libraries = spec.software.libraries if spec and spec.software else {}
    for name, version in sorted(libraries.items()):
        rows.append((field_label(name), version))
    for label, value in sorted(environment.metadata.labels.items() if environment else ()):
        rows.append((field_label(label), value))
    return rows


@dataclass(frozen=True)
class Measurement:
    label: str
    latency_ns: float


def measurements(run: RunSpec) -> list[Measurement]:
    """'latency · mean' 175457 ns, one row per published statistic, the primary one first."""
    if run.timing is None:
        return []
    primary = run.timing.primaryStatistic
    ordered = sorted(run.timing.latencyNs.items(), key=lambda item: (item[0] != primary, item[0]))
    return [Measurement(f"latency · {field_label(statistic)}", value) for statistic, value in ordered]


def implementation_rows(
    implementation: ImplementationSpec | None, run_title: str, source: str, external_id: str
) -> Identity:
    """implementation, project, revision — from the Implementation document, else as the seed page has them.

    Without an Implementation document the project is the name the run's title gives and the revision the
    source's own (SOL-ExecBench's "submission-1307"), as the original site showed them (issue #24). A run
    whose only name is made from its external id (SOL-ExecBench's "submission 18332") is named by that id
    alone ("unnamed": the source gave no name of its own), without a project or revision repeating it.
    """
    name = implementation.name if implementation else run_title.split(" · ")[0]
    unnamed = implementation is None and _same_words(name, display_external_id(source, external_id))
    if implementation is not None:
        project, revision = implementation.project or "", implementation.revision or ""
    elif unnamed:
        project, revision = "", ""
    else:
        project, revision = name, default_revision(source, external_id)
    return Identity(implementation=name, project=project, revision=revision, unnamed=unnamed)


@dataclass(frozen=True)
class Identity:
    """Who made the implementation, as the Identity section names it; '' where the record says nothing."""

    implementation: str
    project: str
    revision: str
    unnamed: bool


def _same_words(a: str, b: str) -> bool:
    """'submission 18332' and 'submission/18332' say the same."""
    return re.sub(r"[^a-z0-9]", "", a.lower()) == re.sub(r"[^a-z0-9]", "", b.lower())


@dataclass(frozen=True)
class PublishedFile:
    """A file an implementation published (records.schema.Artifact), with its source text where known."""

    name: str
    url: str | None
    digest: str | None
    content: str | None


def published_files(implementation: ImplementationSpec | None) -> list[PublishedFile]:
    """The files an implementation published (its `artifacts`: name, digest, url), each with its source text
    where the implementation's solution carries it."""
    sources = {
        source.get("path"): source.get("content")
        for source in solution_of(implementation).get("sources") or []
        if isinstance(source, dict) and isinstance(source.get("content"), str)
    }
    artifacts = implementation.artifacts if implementation else []
    return [PublishedFile(file.name, file.url, file.digest, sources.get(file.name)) for file in artifacts]


def solution_of(implementation: ImplementationSpec | None) -> dict[str, Any]:
    """The solution.json an Implementation carries (what a rerun runs, in records.formats' format), or {}."""
    solution = extra(implementation, "solution")
    return solution if isinstance(solution, dict) else {}


def entry_point_line(implementation: ImplementationSpec | None) -> str:
    """'rmsnorm.py::rmsnorm · python · destination-passing style' for a rerunnable implementation."""
    spec = solution_of(implementation).get("spec") or {}
    if not solution_of(implementation).get("sources") or not isinstance(spec, dict) or not spec.get("entry_point"):
        return ""
    language = spec.get("language") or ", ".join(spec.get("languages") or [])
    style = "destination-passing style" if spec.get("destination_passing_style", True) else "returns its outputs"
    return " · ".join(part for part in (str(spec["entry_point"]), str(language), style) if part)


def ratio_sentence(a: str, b: str, ratio: float) -> str:
    """How run b's latency compares with run a's, in words."""
    if abs(ratio - 1) < 0.0005:
        return f"{b} is as fast as {a}"
    if ratio < 1:
        return f"{b} is {1 / ratio:.3g}× as fast as {a} ({(1 - ratio) * 100:.1f}% less latency)"
    return f"{b} is {ratio:.3g}× slower than {a} ({(ratio - 1) * 100:.1f}% more latency)"


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """('spec.hardware.product', 'NVIDIA B200') for every leaf of a document."""
    if isinstance(value, dict) and value:
        for key in sorted(value):
            yield from flatten(value[key], f"{prefix}.{key}" if prefix else key)
    elif isinstance(value, list) and value and len(value) <= 64:
        for index, item in enumerate(value):
            yield from flatten(item, f"{prefix}[{index}]")
    else:
        yield prefix, value


def differences(left: dict[str, Any] | None, right: dict[str, Any] | None) -> list[tuple[str, Any, Any]]:
    """Every leaf path where two documents differ: (path, left value, right value)."""
    a, b = dict(flatten(left or {})), dict(flatten(right or {}))
    return [(path, a.get(path), b.get(path)) for path in sorted(a.keys() | b.keys()) if a.get(path) != b.get(path)]


def comparability_reasons(left: Any, right: Any) -> list[str]:
    """Why two comparison groups differ, in words (groups as model rows with the group's fields)."""
    reasons = []
    if left.definition_id != right.definition_id:
        reasons.append("they measure different definitions")
    elif (
        left.key != right.key
        and left.hardware == right.hardware
        and left.family == right.family
        and left.harness_version == right.harness_version
    ):
        reasons.append("they were measured on different cases of the definition")
    if left.hardware != right.hardware:
        reasons.append(f"they ran on different GPUs ({left.hardware} vs {right.hardware})")
    if left.family != right.family:
        reasons.append(f"they follow different protocols ({left.family} vs {right.family})")
    elif left.harness_version != right.harness_version:
        reasons.append(f"they used different harness versions ({left.harness_version} vs {right.harness_version})")
    return reasons


def hardware_class_label(name: str) -> str:
    """A registered hardware class as people name it: 'CPU', 'NVIDIA H100'; '' for a class not registered."""
    if is_cpu_class(name):
        return "CPU"  # the model beside it (hardware_label) says which
    hardware = CLASSES.get(name)
    if hardware is None:
        return ""
    return f"{hardware.vendor.upper()} {hardware.products[0]}"


def hardware_label(product: str, hardware_class: str = "", model: str = "") -> str:
    """One label per hardware class, plus the model where it says more: 'CPU · AMD EPYC', 'NVIDIA H100 80GB HBM3'.

    `hardware_class` is the environment's explicit class where one is known (a rerun's host names its
    processor, not 'CPU'); else it is derived from the product. A model that already names its class
    stands alone, so a GPU is not named twice.
    """
    label = hardware_class_label(hardware_class or hardware_class_of(product))
    detail = (model or product).strip()
    if not label:
        return detail or "unknown hardware"
    if detail.upper() in label.upper():
        return label
    if label.upper() in detail.upper():
        return detail
    return f"{label} · {detail}"


# -- labels and numbers as people read them ------------------------------------------

# The documents' keys as the run page labels them; a key not here is split into words (field_label).
FIELD_LABELS = {
    "evaluation_stack": "evaluation stack",
    "cpu-threads": "CPU threads",
    "ci95Low": "95 % interval, low end",
    "ci95High": "95 % interval, high end",
    "stdev": "standard deviation",
    "min": "minimum",
    "max": "maximum",
    "cuda": "CUDA",
    "torch": "PyTorch",
    "triton": "Triton",
    "python": "Python",
}


def field_label(key: str) -> str:
    """'primaryStatistic' -> 'primary statistic'; 'evaluation_stack' -> 'evaluation stack'."""
    if key in FIELD_LABELS:
        return FIELD_LABELS[key]
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key).replace("_", " ").replace("-", " ")
    return words.lower() if words != key or not key.isupper() else key


def significant(value: Any, digits: int = 3) -> str:
    """A measured number to `digits` significant digits: 0.0000019073486 -> '1.91e-06', 0.0625 -> '0.0625'."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return "—"
    return f"{value:.{digits}g}"


def plain_number(value: Any) -> str:
    """A number a source wrote, without binary floating-point noise: 0.027999999999999997 -> '0.028'."""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.12g}"
    return str(value)


# -- per-case results ----------------------------------------------------------------


class ShownCase(CaseResult):
    """A case as run documents spell cases (records.schema.CaseResult), with the fields the table shows.

    Lax where the import was strict: a stored document is shown as it is, never refused.
    """

    model_config = ConfigDict(extra="allow", strict=False)

    sourceStatus: str | None = None  # noqa: N815 (the wire format's spelling, as records.schema)
    speedup: float | None = None
    maxAbsoluteError: float | None = None  # noqa: N815
    maxRelativeError: float | None = None  # noqa: N815
    message: str | None = None
    timing: dict[str, Any] | None = None


@dataclass(frozen=True)
class CaseRow:
    """One row of a per-case table."""

    name: str
    status: str  # a run status (runs.models.Run.Status), for the badge's colour
    status_label: str  # as the run statuses are spelled everywhere: 'Passed', 'Failed'
    code: str  # the source's or the harness's own status where it says more ('INCORRECT_NUMERICAL'), else ''
    latency_ns: float | None
    ci95: tuple[float, float] | None
    reference_ns: float | None
    speedup: float | None
    max_abs_error: str
    max_rel_error: str
    message: str
    # The case's physics floor on the run's class (records.floor), where it has one.
    floor_ns: float | None = None


def case_name(case: ShownCase, axes_by_uuid: Mapping[str, Mapping[str, Any]]) -> str:
    """A case by its axes ('batch_size=128'), from the case itself or its workload's case of that uuid."""
    axes = case.axes or axes_by_uuid.get(case.workload or "", {})
    return axes_text(axes) if axes else (case.workload or "—")


def axes_text(axes: Mapping[str, Any]) -> str:
    """{'batch_size': 4, 'seq_len': 256} -> 'batch_size=4, seq_len=256'."""
    return ", ".join(f"{name}={plain_number(value)}" for name, value in axes.items())


def shape_text(shape: object) -> str:
    """A tensor's shape as definitions give it: '[batch_size, 2048]', or 'scalar' where it has none."""
    if not isinstance(shape, list) or not shape:
        return "scalar"
    return "[" + ", ".join(plain_number(dimension) for dimension in shape) + "]"


def name_cases(text: str, axes_by_uuid: Mapping[str, Mapping[str, Any]]) -> str:
    """A failure reason with each case's uuid replaced by its axes: 'case batch_size=128: max abs error …'."""
    for uuid, axes in axes_by_uuid.items():
        if uuid and axes and uuid in text:
            text = text.replace(uuid, axes_text(axes))
    return text


def workload_axes(workload: WorkloadSpec | None) -> dict[str, dict[str, Any]]:
    """uuid -> axes of each case of a Workload document."""
    cases = (workload.cases if workload else None) or []
    return {case.uuid: dict(case.axes) for case in cases if case.uuid}


def case_rows(
    cases: Sequence[object], axes_by_uuid: Mapping[str, Mapping[str, Any]], floors: Sequence[Any] = ()
) -> list[CaseRow]:
    """The rows of a per-case table, from a run's `cases` (records.schema.CaseResult), or a rerun's result's
    cases as stored (plain values, read here through the same model); `floors`, the cases' physics floors in
    the same order (records.floor.CaseFloor or None), where the table shows them."""
    rows = []
    for index, raw in enumerate(cases):
        try:
            # A run's own cases read through their model still carry the fields it keeps undeclared.
            case = ShownCase.model_validate(raw, from_attributes=isinstance(raw, CaseResult))
        except ValidationError:
            continue  # not a case this version can read; the manifest still shows it
        floor = floors[index] if index < len(floors) else None
        rows.append(replace(_case_row(case, axes_by_uuid), floor_ns=floor.floor_ns if floor else None))
    return rows


def _case_row(case: ShownCase, axes_by_uuid: Mapping[str, Mapping[str, Any]]) -> CaseRow:
    interval = ((case.timing or {}).get("latencyNs") or {}) if isinstance(case.timing, dict) else {}
    low, high = interval.get("ci95Low"), interval.get("ci95High")
    speedup = case.speedup
    if speedup is None and case.latencyNs and case.referenceLatencyNs:
        speedup = case.referenceLatencyNs / case.latencyNs
    code = (case.sourceStatus or "").strip()
    return CaseRow(
        name=case_name(case, axes_by_uuid),
        status=case.status.lower(),
        status_label=STATUS_LABELS.get(case.status.lower(), case.status),
        code=code if code.lower() != case.status.lower() else "",
        latency_ns=case.latencyNs,
        ci95=(low, high) if isinstance(low, (int, float)) and isinstance(high, (int, float)) else None,
        reference_ns=case.referenceLatencyNs,
        speedup=speedup,
        max_abs_error=significant(case.maxAbsoluteError),
        max_rel_error=significant(case.maxRelativeError),
        message=name_cases(case.message or "", axes_by_uuid),
    )
