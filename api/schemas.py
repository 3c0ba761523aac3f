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

from api.problems import PROBLEM_CONTENT_TYPE, STATUS_MEANINGS
from records.canonical import DIGEST_PATTERN
from records.manifest import INDEX_MEMBERS, MANIFEST_ROLES, REQUIRED_ROLES
from records.schema import ROLES, SPEC_MODELS, Closed, Envelope
from records.sources import SOURCES
from runs.models import RerunRequest, Run

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
    """The JSON schemas of a manifest and of everything in it, by name, for the OpenAPI components, with the
    forms the records' validators check (records/schema.py) where a keyword can say them."""
    _, top = models_json_schema([(Manifest, "validation")], ref_template=REF_TEMPLATE)
    schemas: dict[str, Any] = top["$defs"]
    for model in SPEC_MODELS.values():
        properties = schemas[model.__name__].get("properties", {})
        for validator in model.__pydantic_decorators__.field_validators.values():
            form = VALIDATOR_FORMS.get(validator.cls_var_name)
            for name in validator.info.fields if form else ():
                _constrain(properties[name], form)
    return schemas


DIGEST_FORM = {"pattern": f"^{DIGEST_PATTERN.pattern}$"}
# What each of the records' field validators enforces, as JSON Schema (by the validator's name).
VALIDATOR_FORMS: dict[str, dict[str, Any]] = {
    "_digest_form": DIGEST_FORM,
    "_timestamp": {"format": "date-time", "description": "An ISO 8601 timestamp with its timezone."},
}


def _constrain(prop: dict[str, Any], form: dict[str, Any]) -> None:
    """Add the form to a property's string schema (inside anyOf where it may be null)."""
    for option in prop.get("anyOf", [prop]):
        if option.get("type") == "string":
            option.update({key: value for key, value in form.items() if key != "description"})
    if "description" in form:
        prop.setdefault("description", form["description"])


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
        "`sha256:` + the hex sha256 of their RFC 8785 form), unless `redigest` is set.",
        "content": {
            content_type: {"schema": manifests if content_type == "application/json" else lines}
            for content_type in accepted_types
        },
    }


# Headers an error answer carries, by status.
PROBLEM_HEADERS = {
    401: {
        "WWW-Authenticate": {
            "description": "Bearer, and error=invalid_token for a token sent but not valid.",
            "schema": {"type": "string"},
        }
    },
    429: {
        "Retry-After": {
            "description": "Seconds until the token's next window.",
            "schema": {"type": "integer", "minimum": 0},
        }
    },
}
PROBLEM_REF = REF_TEMPLATE.format(model="Problem")


def declare_problems(document: dict[str, Any]) -> None:
    """Every operation's error answers as problem details (api/problems.py): `application/problem+json`, with
    their headers, and the 400 that any request can get before it reaches the operation (a NUL, another charset,
    a Host not served)."""
    for operations in document["paths"].values():
        for operation in operations.values():
            responses = {str(status): response for status, response in operation["responses"].items()}
            responses.setdefault("400", {"content": {"application/json": {"schema": {"$ref": PROBLEM_REF}}}})
            for status, response in responses.items():
                if int(status) < 400:
                    continue
                response["description"] = STATUS_MEANINGS[int(status)]
                content = response.get("content", {})
                if "application/json" in content:
                    content[PROBLEM_CONTENT_TYPE] = content.pop("application/json")
                if headers := PROBLEM_HEADERS.get(int(status)):
                    response["headers"] = headers
            operation["responses"] = dict(sorted(responses.items()))


def tidy_parameters(document: dict[str, Any]) -> None:
    """A parameter left out is absent, never null: its schema is its value's (pydantic says `X | None`)."""
    for operations in document["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                schema = parameter["schema"]
                options = [option for option in schema.pop("anyOf", []) if option.get("type") != "null"]
                if len(options) == 1:
                    schema.update(options[0])
                elif options:
                    schema["anyOf"] = options


def declare_hardware(document: dict[str, Any], products: list[str]) -> None:
    """The `gpu` filter takes the hardware that has runs, as the home page's select lists it (runs/forms.py)."""
    for parameter in document["paths"]["/api/v1/runs"]["get"]["parameters"]:
        if parameter["name"] == "gpu":
            parameter["schema"]["enum"] = products


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


SourceName = cast(Any, Literal[tuple(SOURCES)])
EvidenceLevel = cast(Any, Literal[tuple(Run.Evidence.values)])
RerunState = cast(Any, Literal[tuple(RerunRequest.State.values)])


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
    state: RerunState
    verdict: str | None
    verdict_reason: str | None
    rule_version: int | None
    tolerance: float | None
    counts_for_evidence: bool
    hardware: str
    requested_at: str | None
    finished_at: str | None
    result_run: ResultRun | None
    cases: list[dict[str, Any]]
