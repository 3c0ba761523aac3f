"""What the index needs to know about a run, read from its manifest alone.

Everything here is derived from the documents, so importing an export into an
empty database rebuilds the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from records.identity import comparison_key, definition_title
from records.manifest import RunItem
from records.schema import parse_timestamp

NATIVE_SOURCE = "kernelindex"
# Protocol families whose source publishes its own order: the metric it ranks by, higher first.
SOURCE_NATIVE_ORDER = {"sol_execbench_leaderboard": "sol_score"}


@dataclass(frozen=True)
class DefinitionRef:
    source: str
    name: str
    external_id: str

    @property
    def title(self) -> str:
        return definition_title(self.name)


@dataclass(frozen=True)
class GroupRef:
    key: str
    family: str
    harness: str
    harness_version: str
    hardware: str
    architecture: str
    native_order: str


@dataclass(frozen=True)
class RunSummary:
    source: str
    external_id: str
    title: str
    status: str
    primary_statistic: str
    latency_ns: float | None
    observed_at: datetime | None
    implementation_name: str
    project: str
    source_score: float | None
    on_public_board: bool
    definition: DefinitionRef | None
    group: GroupRef


def summarize(item: RunItem) -> RunSummary:
    run = item.run.value
    spec = run["spec"]
    native = spec.get("sourceNative") or {}
    protocol = item.documents["protocol"].value["spec"]
    hardware = item.documents["environment"].value["spec"]["hardware"]
    timing = spec.get("timing") or {}
    primary = timing.get("primaryStatistic", protocol["measurement"]["primaryStatistic"])
    definition = _definition(item, native)
    family = protocol["comparability"]["family"]
    native_order = SOURCE_NATIVE_ORDER.get(family, "")
    implementation = item.documents.get("implementation")
    title = run["metadata"].get("title") or run["metadata"]["name"]
    implementation_name, project = _implementation(implementation.value["spec"] if implementation else None, title)
    score = native.get("metrics", {}).get(native_order) if native_order else None
    group = GroupRef(
        key=comparison_key(
            workload=spec.get("workloadDigest") or _definition_key(definition),
            family=family,
            harness_version=protocol["harness"]["version"],
            hardware=hardware["product"],
        ),
        family=family,
        harness=protocol["harness"]["name"],
        harness_version=protocol["harness"]["version"],
        hardware=hardware["product"],
        architecture=hardware.get("architecture", ""),
        native_order=native_order,
    )
    return RunSummary(
        source=native.get("source", NATIVE_SOURCE),
        external_id=native.get("externalId", run["metadata"]["name"]),
        title=title,
        status=spec["status"],
        primary_statistic=primary,
        latency_ns=timing.get("latencyNs", {}).get(primary),
        observed_at=parse_timestamp(spec["observedAt"]) if spec.get("observedAt") else None,
        implementation_name=implementation_name,
        project=project,
        source_score=float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
        on_public_board=native.get("submissionMode") != "private",
        definition=definition,
        group=group,
    )


def _definition(item: RunItem, native: dict[str, Any]) -> DefinitionRef | None:
    workload = item.documents.get("workload")
    if workload is not None:
        ref = workload.value["spec"]["definition"]
        return DefinitionRef(ref["source"], ref["name"], str(ref.get("id") or ""))
    if native.get("benchmark"):
        return DefinitionRef(native["source"], native["benchmark"], str(native.get("kernelId") or ""))
    return None


def _definition_key(definition: DefinitionRef | None) -> dict[str, str]:
    if definition is None:
        return {}
    return {"source": definition.source, "name": definition.name}


def _implementation(spec: dict[str, Any] | None, title: str) -> tuple[str, str]:
    """Name and project; without an Implementation document, the run title's first part names it."""
    if spec is not None:
        return spec["name"], spec.get("project") or ""
    first = title.split(" · ")[0]
    return first, first
