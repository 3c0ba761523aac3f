"""Reads that several views and commands share."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any

from django.db.models import QuerySet

from records.canonical import parse_json
from records.manifest import manifest_text
from records.schema import REFERENCE_FIELDS
from runs.models import Document, Run, RunVersion

EXPORT_CHUNK = 1000


def references_of(run_document: dict[str, Any]) -> dict[str, str]:
    """role -> digest for every document a run document points to."""
    spec = run_document["spec"]
    return {role: spec[name] for role, name in REFERENCE_FIELDS.items() if spec.get(name)}


def run_documents(run: Run) -> dict[str, Document]:
    """The current version's documents by role, in one query. Foreign references may be absent."""
    wanted = {
        "run": run.digest,
        "protocol": run.protocol_digest,
        "environment": run.environment_digest,
        "workload": run.workload_digest,
        "implementation": run.implementation_digest,
    }
    found = Document.objects.in_bulk([d for d in wanted.values() if d])
    return {role: found[d] for role, d in wanted.items() if d in found}


def run_manifest_text(run: Run, documents: dict[str, Document]) -> str:
    return manifest_text({role: doc.canonical for role, doc in documents.items()}, run.declared_digests)


def iter_version_manifests() -> Iterator[str]:
    """Every version of every run as a canonical manifest, each run's oldest version first."""
    versions: QuerySet[RunVersion] = RunVersion.objects.order_by("run_id", "imported_at", "id")
    rows = versions.values_list("digest", "declared_digests").iterator(chunk_size=EXPORT_CHUNK)
    while chunk := list(islice(rows, EXPORT_CHUNK)):
        run_texts = Document.objects.in_bulk([d for d, _ in chunk])
        references = {d: references_of(parse_json(run_texts[d].canonical)) for d, _ in chunk}
        wanted = {digest for refs in references.values() for digest in refs.values()}
        others = Document.objects.in_bulk(list(wanted))
        for run_digest, declared in chunk:
            texts = {"run": run_texts[run_digest].canonical}
            for role, digest in references[run_digest].items():
                if digest in others:
                    texts[role] = others[digest].canonical
            yield manifest_text(texts, declared)
