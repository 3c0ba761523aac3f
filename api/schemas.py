"""What the API reads and writes, as OpenAPI shows it.

A manifest's schema is composed from the importer's own models (records/schema.py:
the envelope and each kind's spec, under the roles records/manifest.py names);
nothing here restates a record's fields. The response models describe the
bodies runs/serializers.py builds for the pages' `.json` twins, which the API
serves as they are; fields a serializer adds later pass through (extra="allow").
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.alias_generators import to_camel
from pydantic.json_schema import models_json_schema

from records.manifest import INDEX_MEMBERS, MANIFEST_ROLES, REQUIRED_ROLES
from records.schema import ROLES, SPEC_MODELS, Closed, Envelope

REF_TEMPLATE = "#/components/schemas/{model}"
MANIFEST_REF = REF_TEMPLATE.format(model="Manifest")


# -- manifests -----------------------------------------------------------------------


def _document_model(role: str) -> type[BaseModel]:
    """The envelope with its kind fixed and its spec typed: what records.schema.validate_document checks."""
    kind = ROLES[role]
    return create_model(
        f"{kind}Document",
        __base__=Envelope,
        __doc__=f"The manifest's {role} document, a {kind}.",
        kind=(cast(Any, Literal[kind]), ...),
        spec=(SPEC_MODELS[kind], ...),
    )


def _manifest_model() -> type[BaseModel]:
    """The members records.manifest.manifest_item accepts: the documents by role, provenance, and the index's own."""
    members: dict[str, Any] = {}
    for role in MANIFEST_ROLES:
        document = _document_model(role)
        members[role] = (document, ...) if role in REQUIRED_ROLES else (document | None, None)
    members["provenance"] = (
        dict[str, dict[str, str]] | None,
        Field(None, description="{declaredDigests: {role: digest}}: digests declared under another recipe."),
    )
    for name in INDEX_MEMBERS:
        members[name] = (Any, Field(None, description="What KernelIndex derives itself; an import ignores it."))
    return create_model(
        "Manifest",
        __base__=Closed,
        __doc__="A native manifest: a BenchmarkRun with the documents it refers to by digest.",
        **members,
    )


Manifest = _manifest_model()


# A field holding a stored manifest: a plain object to pydantic (served as stored, never re-validated on the
# way out), shown as a Manifest in the OpenAPI document (pydantic cannot point at a schema it did not make).
MANIFEST_MARK = "x-kernelindex-manifest"
ManifestJson = Annotated[dict[str, Any], Field(json_schema_extra={MANIFEST_MARK: True})]


def manifest_schemas() -> dict[str, Any]:
    """The JSON schemas of a manifest and of everything in it, by name, for the OpenAPI components."""
    _, top = models_json_schema([(Manifest, "validation")], ref_template=REF_TEMPLATE)
    schemas: dict[str, Any] = top["$defs"]
    return schemas


def point_at_manifests(components: dict[str, Any]) -> None:
    """Make each marked property of the response schemas a reference to the Manifest schema."""
    for schema in components.values():
        for name, prop in (schema.get("properties") or {}).items():
            if prop.pop(MANIFEST_MARK, False):
                schema["properties"][name] = {"allOf": [{"$ref": MANIFEST_REF}], "description": prop.get("description")}


# -- responses -----------------------------------------------------------------------


class Out(BaseModel):
    """A JSON body as runs/serializers.py spells it (camelCase)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class Problem(Out):
    detail: str = Field(description="What went wrong, in words.")


class SubmissionProblem(Problem):
    """A submission refused; nothing of it was stored. Where a manifest was at fault, where in it."""

    line: int | None = Field(None, description="The JSONL line (1-based); null for a JSON document.")
    manifest: int | None = Field(None, description="The manifest's index in a JSON array (0-based); else null.")
    document: str | None = Field(None, description="The manifest member at fault: run, protocol, environment, …")
    field: str | None = Field(None, description="The dotted path to the field, as the importer names it.")
    message: str | None = Field(None, description="The importer's message, without the place.")


class SubmittedRun(Out):
    run_id: str
    url: str
    digest: str
    line: int | None


class Submission(Out):
    created: int = Field(description="Runs new to the index.")
    updated: int = Field(description="Known runs that gained a new version.")
    unchanged: int = Field(description="Runs stored before exactly as submitted.")
    runs: list[SubmittedRun]


class RunSummary(Out):
    run_id: str
    url: str
    source: str
    external_id: str
    digest: str
    definition: str | None
    implementation: str
    hardware: str
    status: str
    evidence: str = Field(description="reported, reproduced or not_reproduced.")
    primary_statistic: str
    latency_ns: float | None
    source_score: float | None
    observed_at: str | None
    published_at: str


class Withdrawal(Out):
    at: str
    reason: str


class RunDetail(RunSummary):
    manifest_url: str = Field(description="The canonical manifest, byte for byte as its digests are computed.")
    withdrawn: Withdrawal | None
    manifest: ManifestJson = Field(description="The canonical manifest with the run's evidence and reruns.")


class Pagination(Out):
    """Where a page of a list is: its count and the link to the next page; the twin may add more links."""

    count: int | None = None
    next: str | None = Field(None, description="The next page, or null on the last one.")


class RankedRun(RunSummary):
    rank: int | None


class RunPage(Pagination):
    filters: dict[str, str] = Field(description="The filters applied.")
    runs: list[RunSummary]


class GroupReference(Out):
    kind: str
    label: str
    latency_ns: float


class Group(Pagination):
    key: str
    definition: str | None
    hardware: str
    architecture: str
    comparability_family: str
    harness: str
    harness_version: str
    order: str = Field(description="source-native or latency.")
    references: list[GroupReference]
    board: dict[str, Any] | None
    runs: list[RankedRun]


class DefinitionCase(Out):
    index: int
    uuid: str
    axes: dict[str, Any]
    tolerance: dict[str, Any] | None
    references: dict[str, float]


class DefinitionGroup(Out):
    key: str
    url: str
    hardware: str
    harness: str
    harness_version: str
    comparability_family: str
    runs: int
    best_latency_ns: float | None


class Definition(Out):
    source: str
    name: str
    external_id: str
    title: str
    description: str
    subset: str
    axes: dict[str, Any]
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    cases: list[DefinitionCase]
    groups: list[DefinitionGroup]


class RunLink(Out):
    run_id: str
    url: str


class ResultRun(RunLink):
    digest: str


class Rerun(Out):
    id: int
    run: RunLink = Field(description="The run this rerun checks.")
    state: str
    verdict: str | None
    verdict_reason: str | None
    rule_version: int | None
    tolerance: float | None
    counts_for_evidence: bool
    hardware: str
    requested_at: str | None
    finished_at: str | None
    result_run: ResultRun | None
    attestation: str | None = Field(
        description="Where the DSSE envelope its worker signed is published; none before it finished with one."
    )
    cases: list[dict[str, Any]]


class Worker(Out):
    """A rerun worker's registered key (records.attestation.PublishedKey)."""

    name: str
    classes: list[str] = Field(description="The hardware classes it may attest reruns on.")
    public_key: str = Field(description="ed25519: its 32 raw bytes, base64.")
    key_id: str = Field(description="sha256 of the raw public key: the keyid its DSSE signatures name.")
    created_at: str
    revoked_at: str | None = Field(description="From this time on nothing signed with the key is taken.")


class Workers(Out):
    workers: list[Worker]
