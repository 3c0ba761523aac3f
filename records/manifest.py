"""Manifests: a run with the documents it refers to, sealed under our digest recipe.

A sealed document has been validated and canonicalised once; its digest is
the sha256 of exactly the text that is stored and served.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from records.canonical import CanonicalizationError, canonical_bytes, canonical_text, digest_of_bytes, is_digest
from records.errors import RecordError
from records.identity import NAME_ID_FIELD, source_identity
from records.rerun import rerun_result_shape
from records.schema import REFERENCE_FIELDS, ROLES, DocumentError, validate_document

MANIFEST_ROLES = ("run", "protocol", "environment", "workload", "implementation")
# What a run's JSON twin adds beside its documents: KernelIndex's own state of the run (its evidence
# level, reruns, and where it stands with the verification policy), digested by nothing. An import ignores
# them: the index derives them itself.
INDEX_MEMBERS = ("evidence", "reruns", "verification", "floor")
REQUIRED_ROLES = ("run", "protocol", "environment")


@dataclass(frozen=True)
class Sealed:
    kind: str
    name: str
    value: dict[str, Any]
    text: str
    digest: str


@dataclass(frozen=True)
class RunItem:
    """One run as a manifest: role -> sealed document, plus digests the source declared.

    `id_field` is where the source record holds the run's external id, in the
    source's own words (`id` for a SOL-ExecBench submission), so that an error
    about a repeated id names the field a user can find in the file.
    """

    line: int | None
    documents: dict[str, Sealed]
    declared_digests: dict[str, str] = field(default_factory=dict)
    id_field: str = "externalId"

    @property
    def run(self) -> Sealed:
        return self.documents["run"]


def seal(value: dict[str, Any], role: str) -> Sealed:
    """Validate and canonicalise a document; raises DocumentError naming the field."""
    envelope = validate_document(value, role)
    try:
        data = canonical_bytes(value)
    except CanonicalizationError as error:
        raise DocumentError(role, str(error)) from None
    return Sealed(envelope.kind, envelope.metadata.name, value, data.decode(), digest_of_bytes(data))


def assemble(
    path: Path,
    line: int | None,
    run: dict[str, Any],
    references: Mapping[str, Sealed | None],
    id_field: str = "externalId",
) -> RunItem:
    """A run made by a source adapter: point it at its documents by digest, then seal it."""
    documents = {role: document for role, document in references.items() if document is not None}
    for role, document in documents.items():
        run["spec"][REFERENCE_FIELDS[role]] = document.digest
    try:
        documents["run"] = seal(run, "run")
    except DocumentError as error:
        raise RecordError(path, line, error.field, error.message) from None
    return RunItem(line, documents, id_field=id_field)


def manifest_item(
    value: Any, path: Path, line: int | None, *, redigest: bool, prefix: str = "", rerun_result: bool = False
) -> RunItem:
    """A manifest made elsewhere: check that every digest the run declares is the digest we compute.

    With `redigest`, a run whose declared digests were made by another recipe
    is pointed at our digests instead, and each declared value is kept. A
    manifest shaped like a rerun's result (records.rerun.rerun_result_shape) is
    refused, naming the field, unless `rerun_result` says its writer may write
    one (the collector, on a verified attestation; a dump whose reruns attest it).
    """

    def fail(field_name: str, message: str) -> RecordError:
        return RecordError(path, line, f"{prefix}{field_name}", message)

    if not isinstance(value, dict):
        raise fail("", "a manifest is a JSON object with run, protocol and environment")
    if not rerun_result and (shape := rerun_result_shape(value)) is not None:
        raise fail(*shape)
    unknown = set(value) - set(MANIFEST_ROLES) - set(INDEX_MEMBERS) - {"provenance"}
    if unknown:
        raise fail(sorted(unknown)[0], f"unknown manifest member; expected {', '.join(MANIFEST_ROLES)}")
    for role in REQUIRED_ROLES:
        # Null is missing too: an optional document may be null, a required one may not.
        if value.get(role) is None:
            raise fail(role, "missing: a manifest needs run, protocol and environment")
    declared = _declared_provenance(value.get("provenance"), fail)
    sealed: dict[str, Sealed] = {}
    try:
        validate_document(value["run"], "run")
        for role in MANIFEST_ROLES[1:]:
            if value.get(role) is not None:
                sealed[role] = seal(value[role], role)
    except DocumentError as error:
        raise fail(error.field, error.message) from None
    run = copy.deepcopy(value["run"])
    mismatches = []
    for role, document in sealed.items():
        reference = REFERENCE_FIELDS[role]
        stated = run["spec"].get(reference)
        if stated == document.digest:
            continue
        run["spec"][reference] = document.digest
        if stated is not None:
            declared[role] = stated
            mismatches.append(
                f"the run declares {ROLES[role]} digest {stated}, but the {role} document in this manifest "
                f"digests to {document.digest}"
            )
    if mismatches and not redigest:
        first = next(role for role in sealed if role in declared)
        raise fail(
            f"run.spec.{REFERENCE_FIELDS[first]}",
            "; ".join(mismatches) + " (sha256 of the RFC 8785 form); import with --redigest to store the run "
            "under our digests and keep each declared value as provenance",
        )
    try:
        sealed["run"] = seal(run, "run")
    except DocumentError as error:
        raise fail(error.field, error.message) from None
    # The field the run's external id is read from, as records.summary reads it.
    identity = source_identity(run)
    id_field = identity.field if identity is not None else NAME_ID_FIELD
    # In the roles' order, however the manifest ordered them: a page lists them so, and a manifest read back
    # from its canonical (sorted) form gives the same run.
    declared = {role: declared[role] for role in REFERENCE_FIELDS if role in declared}
    return RunItem(line, sealed, declared, id_field=prefix + id_field)


def _declared_provenance(provenance: Any, fail: Any) -> dict[str, str]:
    if provenance is None:
        return {}
    declared = provenance.get("declaredDigests") if isinstance(provenance, dict) else None
    if not isinstance(declared, dict) or set(provenance) != {"declaredDigests"}:
        raise fail("provenance", "expected {declaredDigests: {role: digest}}")
    for role, value in declared.items():
        if role not in REFERENCE_FIELDS or not is_digest(value):
            raise fail(f"provenance.declaredDigests.{role}", "expected a document role and a sha256 digest")
    return dict(declared)


def manifest_text(
    texts: dict[str, str], declared_digests: dict[str, str] | None = None, index: dict[str, Any] | None = None
) -> str:
    """The canonical manifest, composed from the documents' canonical texts.

    RFC 8785 writes an object as its members in sorted key order, each value
    in its own canonical form, so joining the stored texts is exact: every
    document appears in the manifest byte for byte as it was digested.
    `index` adds the INDEX_MEMBERS a JSON twin carries.
    """
    parts = {role: text for role, text in texts.items() if role in MANIFEST_ROLES}
    if declared_digests:
        parts["provenance"] = canonical_text({"declaredDigests": declared_digests})
    for name, value in (index or {}).items():
        if name in INDEX_MEMBERS:
            parts[name] = canonical_text(value)
    return "{" + ",".join(f'"{key}":{parts[key]}' for key in sorted(parts)) + "}"
