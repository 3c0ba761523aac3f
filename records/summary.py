"""What the index needs to know about a run, read from its manifest alone.

Everything here is derived from the documents, so importing an export into an
empty database rebuilds the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple

from records.identity import comparison_key, definition_title, run_id_for, source_identity
from records.manifest import RunItem, Sealed
from records.schema import parse_timestamp

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


# A document as the index stores it: (digest, kind, name, canonical text).
DocumentRow = tuple[str, str, str, str]


class RunSummary(NamedTuple):
    """A run reduced to what the importer writes: plain values, cheap to send to another process.

    It is made next to the adapter (on the reader thread, or in the reader
    process for a large file), so that the writer only matches and writes. As
    a plain tuple it pickles and unpickles in a few microseconds, where the
    RunItem it comes from, with its parsed documents, took ten times as long.
    """

    line: int | None
    id_field: str
    run_id: str
    source: str
    external_id: str
    digest: str
    declared_digests: dict[str, str]
    # Every document of the manifest, the run's own among them.
    documents: tuple[DocumentRow, ...]
    protocol_digest: str
    environment_digest: str
    workload_digest: str
    implementation_digest: str
    definition: DefinitionRef | None
    group: GroupRef
    title: str
    implementation_name: str
    project: str
    status: str
    primary_statistic: str
    latency_ns: float | None
    source_score: float | None
    on_public_board: bool
    observed_at: datetime | None
    # The implementation's author, where its document names one.
    author: str = ""


def reported_latency(spec: dict[str, Any], protocol_statistic: str) -> Any:
    """The latency a run document reports: its timing's figure of its primary statistic (the protocol's, unless the
    run names its own), as it is indexed and ranked."""
    timing = spec.get("timing") or {}
    return (timing.get("latencyNs") or {}).get(timing.get("primaryStatistic", protocol_statistic))


def summarize(item: RunItem) -> RunSummary:
    run = item.run.value
    spec = run["spec"]
    native = spec.get("sourceNative") or {}
    documents = item.documents
    timing = spec.get("timing") or {}
    primary = timing.get("primaryStatistic", documents["protocol"].value["spec"]["measurement"]["primaryStatistic"])
    definition = _definition(item, native)
    implementation = documents.get("implementation")
    title = run["metadata"].get("title") or run["metadata"]["name"]
    implementation_name, project = _implementation(implementation.value["spec"] if implementation else None, title)
    workload_digest = spec.get("workloadDigest") or ""
    group = _group(item, workload_digest or _definition_key(definition))
    score = native.get("metrics", {}).get(group.native_order) if group.native_order else None
    identity = source_identity(run)
    assert identity is not None  # the schema requires both, as strings
    return RunSummary(
        item.line,
        item.id_field,
        run_id_for(identity.source, identity.external_id),
        identity.source,
        identity.external_id,
        item.run.digest,
        item.declared_digests,
        tuple(_document_row(sealed) for sealed in documents.values()),
        documents["protocol"].digest,
        documents["environment"].digest,
        workload_digest,
        spec.get("implementationDigest") or "",
        definition,
        group,
        title,
        implementation_name,
        project,
        spec["status"],
        primary,
        reported_latency(spec, primary),
        float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
        native.get("submissionMode") != "private",
        parse_timestamp(spec["observedAt"]) if spec.get("observedAt") else None,
        (implementation.value["spec"].get("author") or "") if implementation else "",
    )


# Shared documents (a protocol, an environment, a workload) recur on most runs: one
# row object each, so that a pickled chunk of runs carries each one once. Cleared
# when full, never stale: the key is the digest.
_DOCUMENT_ROWS: dict[str, DocumentRow] = {}
DOCUMENT_ROWS_REMEMBERED = 4096


def _document_row(sealed: Sealed) -> DocumentRow:
    if sealed.kind == "BenchmarkRun":
        return (sealed.digest, sealed.kind, sealed.name, sealed.text)
    row = _DOCUMENT_ROWS.get(sealed.digest)
    if row is None:
        if len(_DOCUMENT_ROWS) >= DOCUMENT_ROWS_REMEMBERED:
            _DOCUMENT_ROWS.clear()
        row = _DOCUMENT_ROWS[sealed.digest] = (sealed.digest, sealed.kind, sealed.name, sealed.text)
    return row


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
        # The schema lets a document say null for an architecture it does not know, as it may leave it out.
        architecture=hardware.get("architecture") or "",
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
        return _definition_ref(ref["source"], ref["name"], str(ref.get("id") or ""))
    if native.get("benchmark"):
        return _definition_ref(native["source"], native["benchmark"], str(native.get("kernelId") or ""))
    return None


# A few hundred definitions recur across a file's runs: one object each, as for groups.
_definition_ref = lru_cache(maxsize=4096)(DefinitionRef)


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
