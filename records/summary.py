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
    timing = spec.get("timing") or {}
    primary = timing.get("primaryStatistic", protocol["measurement"]["primaryStatistic"])
    definition = _definition(item, native)
    implementation = item.documents.get("implementation")
    title = run["metadata"].get("title") or run["metadata"]["name"]
    implementation_name, project = _implementation(implementation.value["spec"] if implementation else None, title)
    group = _group(item, spec.get("workloadDigest") or _definition_key(definition))
    score = native.get("metrics", {}).get(group.native_order) if group.native_order else None
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


# Runs that share a protocol, an environment and a workload share a group: a file
# of a million runs has a few hundred. Cleared when full, never stale: the key is
# made of digests.
_GROUPS: dict[tuple[str, str, str | tuple[tuple[str, str], ...]], GroupRef] = {}
GROUPS_REMEMBERED = 4096


def _group(item: RunItem, workload: str | dict[str, str]) -> GroupRef:
    protocol_document, environment_document = item.documents["protocol"], item.documents["environment"]
    cache_key = (
        protocol_document.digest,
        environment_document.digest,
        workload if isinstance(workload, str) else tuple(sorted(workload.items())),
    )
    group = _GROUPS.get(cache_key)
    if group is not None:
        return group
    protocol = protocol_document.value["spec"]
    hardware = environment_document.value["spec"]["hardware"]
    family = protocol["comparability"]["family"]
    group = GroupRef(
        key=comparison_key(
            workload=workload,
            family=family,
            harness_version=protocol["harness"]["version"],
            hardware=hardware["product"],
        ),
        family=family,
        harness=protocol["harness"]["name"],
        harness_version=protocol["harness"]["version"],
        hardware=hardware["product"],
        architecture=hardware.get("architecture", ""),
        native_order=SOURCE_NATIVE_ORDER.get(family, ""),
    )
    if len(_GROUPS) >= GROUPS_REMEMBERED:
        _GROUPS.clear()
    _GROUPS[cache_key] = group
    return group


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
