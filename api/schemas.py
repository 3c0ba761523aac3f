"""What the API reads and writes, as OpenAPI shows it.

A manifest's schema is composed from the importer's own models (records/schema.py:
the envelope and each kind's spec, under the roles records/manifest.py names);
nothing here restates a record's fields. The response models describe the
bodies runs/serializers.py builds for the pages' `.json` twins, which the API
serves as they are; fields a serializer adds later pass through (extra="allow").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, cast

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.alias_generators import to_camel
from pydantic.json_schema import models_json_schema

from records.canonical import DIGEST_PATTERN
from records.definition import DefinitionFields
from records.hardware import CLASSES
from records.manifest import INDEX_MEMBERS, MANIFEST_ROLES, REQUIRED_ROLES
from records.schema import REFERENCE_FIELDS, ROLES, SPEC_MODELS, Closed, Envelope
from records.sources import SOURCES
from runs.models import Run
from verification.models import RerunRequest
from web.middleware import NUL

REF_TEMPLATE = "#/components/schemas/{model}"
MANIFEST_REF = REF_TEMPLATE.format(model="Manifest")
PROBLEM_REF = REF_TEMPLATE.format(model="Problem")

# -- closed sets, each read from the one registry the server checks against ------------------------------------

if TYPE_CHECKING:
    # Literals made at run time are strings to a type checker.
    SourceName: TypeAlias = str
    EvidenceLevel: TypeAlias = str
    RerunState: TypeAlias = str
    HardwareClassName: TypeAlias = str
    DocumentRole: TypeAlias = str
else:
    SourceName = Literal[tuple(SOURCES)]
    EvidenceLevel = Literal[tuple(Run.Evidence.values)]
    RerunState = Literal[tuple(RerunRequest.State.values)]
    # A rerun is only ever requested on a registered class (verification.reruns.request_rerun), and a worker serves one.
    HardwareClassName = Literal[tuple(CLASSES)]
    DocumentRole = Literal[tuple(REFERENCE_FIELDS)]
DIGEST = f"^{DIGEST_PATTERN.pattern}$"
# Text with no NUL: what every string parameter may hold (web.middleware refuses a NUL anywhere in an address).
TEXT_IN_ADDRESS = f"^[^\\x{ord(NUL):02x}]*$"


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


class Provenance(Closed):
    """What records.manifest reads as a manifest's provenance: the digests its run declared under another
    recipe, by the role of the document."""

    declared_digests: dict[DocumentRole, Annotated[str, Field(pattern=DIGEST)]] = Field(alias="declaredDigests")


def _manifest_model() -> type[BaseModel]:
    """The members records.manifest.manifest_item accepts: the documents by role, provenance, and the index's own."""
    members: dict[str, Any] = {}
    for role in MANIFEST_ROLES:
        document = _document_model(role)
        members[role] = (document, ...) if role in REQUIRED_ROLES else (document | None, None)
    members["provenance"] = (Provenance | None, None)
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
    """The JSON schemas of a manifest and of everything in it, by name, for the OpenAPI components: the records'
    own models (records/schema.py), their patterns and limits included."""
    _, top = models_json_schema([(Manifest, "validation")], ref_template=REF_TEMPLATE)
    schemas: dict[str, Any] = top["$defs"]
    return schemas


def point_at_manifests(components: dict[str, Any]) -> None:
    """Make each marked property of the response schemas a reference to the Manifest schema."""
    for schema in components.values():
        for name, prop in (schema.get("properties") or {}).items():
            if prop.pop(MANIFEST_MARK, False):
                schema["properties"][name] = {"allOf": [{"$ref": MANIFEST_REF}], "description": prop.get("description")}


def submission_body(max_runs: int, max_bytes: int, accepted_types: list[str]) -> dict[str, Any]:
    """The request body of a submission, as api/submissions.py reads it."""
    manifests = {
        "oneOf": [{"$ref": MANIFEST_REF}, {"type": "array", "items": {"$ref": MANIFEST_REF}, "maxItems": max_runs}]
    }
    lines = {"type": "string", "maxLength": max_bytes, "description": "One Manifest per line."}
    return {
        "required": True,
        "description": f"A native manifest, a JSON array of them, or JSON lines of them: at most {max_runs} runs "
        f"and {max_bytes} bytes (larger is 413). Without a content type, or as text/plain, the content tells "
        "which; a type other than these is 415. Each run's digests must be those of its documents (as "
        "`sha256:` + the hex sha256 of their RFC 8785 form), unless `redigest` is set; the run's source and "
        "project must be the token's (else 403).",
        "content": {
            content_type: {"schema": manifests if content_type == "application/json" else lines}
            for content_type in accepted_types
        },
    }


# -- parameters ----------------------------------------------------------------------


def declare_parameters(document: dict[str, Any]) -> None:
    """Each parameter's schema as the server checks it: a parameter left out is absent, never null (pydantic
    says `X | None`), and text holds no NUL."""
    for operations in document["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                schema = parameter["schema"]
                options = [option for option in schema.pop("anyOf", []) if option.get("type") != "null"]
                if len(options) == 1:
                    schema.update(options[0])
                elif options:
                    schema["anyOf"] = options
                if schema.get("type") == "string" and not {"pattern", "enum"} & set(schema):
                    schema["pattern"] = TEXT_IN_ADDRESS


def follow(operation_id: str, **parameters: str) -> dict[str, Any]:
    """An OpenAPI link: the operation that a response's values lead to (clients, and the stateful tests of
    tests/api/test_schemathesis.py, follow it)."""
    return {"operationId": operation_id, "parameters": parameters}


# -- responses -----------------------------------------------------------------------


class Out(BaseModel):
    """A JSON body as runs/serializers.py spells it (camelCase)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


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
    source: SourceName
    external_id: str
    digest: str
    definition: str | None
    implementation: str
    hardware: str
    status: str
    evidence: EvidenceLevel
    primary_statistic: str
    latency_ns: float | None = Field(description="The latency the run is ranked by.")
    reported_latency_ns: float | None = Field(
        description="Where a rerun that reproduced the run measured its latency slower than reported beyond the "
        "tolerance, the latency the run reported; latencyNs is then the rerun's. Null otherwise."
    )
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


class Definition(Out, DefinitionFields):
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
    state: RerunState
    verdict: str | None
    verdict_reason: str | None
    attempt_reasons: list[str] = Field(
        description="Why each attempt before the last came out inconclusive, in order (the last's is the verdict's)."
    )
    rule_version: int | None
    tolerance: float | None
    counts_for_evidence: bool
    hardware: HardwareClassName
    requested_at: str | None
    finished_at: str | None
    result_run: ResultRun | None
    attestation: str | None = Field(
        description="Where the DSSE envelope its worker signed is published; none before it finished with one."
    )
    attestation_verified: bool | None = Field(
        description="Whether the site verified its attestation again as it served this, the result run included; "
        "an attestation that no longer verifies moves nothing. None where it has none."
    )
    attestation_recorded_at: str | None = Field(
        description="When the site took the attestation in: a key revoked after that still verifies it."
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


class SiteKey(Out):
    """The site's own key: it signs every rerun job it sends, and a worker runs no other."""

    public_key: str = Field(description="ed25519: its 32 raw bytes, base64.")
    key_id: str = Field(description="sha256 of the raw public key: the keyid its DSSE signatures name.")


class Workers(Out):
    workers: list[Worker]
    site: SiteKey = Field(description="The key that signs the jobs the workers run.")
