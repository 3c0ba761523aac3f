"""The record schema `kernelindex.dev/v1alpha1`.

Every record is `{apiVersion, kind, metadata{name,title,labels}, spec}`. These
models validate documents; they never rewrite them: a document is digested in
the form it arrived in, so fields this version does not know are kept.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from records.canonical import DIGEST_PATTERN, is_digest

API_VERSION = "kernelindex.dev/v1alpha1"
KINDS = ("BenchmarkRun", "BenchmarkProtocol", "ExecutionEnvironment", "Workload", "Implementation")
ROLES = {
    "run": "BenchmarkRun",
    "protocol": "BenchmarkProtocol",
    "environment": "ExecutionEnvironment",
    "workload": "Workload",
    "implementation": "Implementation",
}
# The run refers to each other document by digest, under these spec fields.
REFERENCE_FIELDS = {
    "protocol": "protocolDigest",
    "environment": "environmentDigest",
    "workload": "workloadDigest",
    "implementation": "implementationDigest",
}

RUN_STATUSES = ("passed", "failed", "error", "timeout", "measured")
# Statuses whose latency is a measurement of a correct kernel, so it can be ranked (the index ranks by them too).
RANKABLE_STATUSES = ("passed", "measured")

NonEmpty = Annotated[str, Field(min_length=1, max_length=500)]
# What the index keeps in columns of their own (runs/models.py takes these lengths from here): a value longer
# than its column is refused with the field's name, not left to fail where it is stored.
SOURCE_MAX_LENGTH = 32
EXTERNAL_ID_MAX_LENGTH = 255
STATISTIC_MAX_LENGTH = 32
PRODUCT_MAX_LENGTH = 200
ARCHITECTURE_MAX_LENGTH = 32
FAMILY_MAX_LENGTH = 100
HARNESS_MAX_LENGTH = 200
HARNESS_VERSION_MAX_LENGTH = 100
DEFINITION_NAME_MAX_LENGTH = 255
DEFINITION_ID_MAX_LENGTH = 64
SourceKey = Annotated[str, Field(min_length=1, max_length=SOURCE_MAX_LENGTH)]
Statistic = Annotated[str, Field(min_length=1, max_length=STATISTIC_MAX_LENGTH)]
DefinitionName = Annotated[str, Field(min_length=1, max_length=DEFINITION_NAME_MAX_LENGTH)]
DefinitionId = Annotated[str, Field(min_length=1, max_length=DEFINITION_ID_MAX_LENGTH)]
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@/+:=-]*$")
NAME_MAX_LENGTH = 253
Name = Annotated[str, Field(min_length=1, max_length=NAME_MAX_LENGTH, pattern=NAME_PATTERN.pattern)]


# Absent collections default through a factory: pydantic deep-copies a literal
# `{}` default on every validation, and an import validates several per run.
class Open(BaseModel):
    """A spec part that keeps fields this version does not know."""

    model_config = ConfigDict(extra="allow", strict=True)


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Digest = Annotated[str, Field(min_length=71, max_length=71)]
# How a run refers to a document: RunSpec._digest_form checks the form (its message says what is wrong); the
# pattern says the same to readers of the JSON Schema (the API's OpenAPI document).
ReferenceDigest = Annotated[Digest, Field(json_schema_extra={"pattern": f"^{DIGEST_PATTERN.pattern}$"})]


class Metadata(Closed):
    name: Name
    title: Annotated[str, Field(max_length=500)] | None = None
    labels: dict[str, Annotated[str, Field(max_length=500)]] = Field(default_factory=dict)


# -- BenchmarkProtocol -------------------------------------------------------


class Harness(Open):
    name: Annotated[str, Field(min_length=1, max_length=HARNESS_MAX_LENGTH)]
    version: Annotated[str, Field(min_length=1, max_length=HARNESS_VERSION_MAX_LENGTH)]


class Measurement(Open):
    timer: NonEmpty
    primaryStatistic: Statistic


class Correctness(Open):
    reference: NonEmpty
    comparator: NonEmpty


class Comparability(Open):
    family: Annotated[str, Field(min_length=1, max_length=FAMILY_MAX_LENGTH)]
    notes: str | None = None


class ProtocolSpec(Open):
    harness: Harness
    measurement: Measurement
    correctness: Correctness
    comparability: Comparability


# -- ExecutionEnvironment ----------------------------------------------------


class Hardware(Open):
    vendor: NonEmpty
    product: Annotated[str, Field(min_length=1, max_length=PRODUCT_MAX_LENGTH)]
    architecture: Annotated[str, Field(min_length=1, max_length=ARCHITECTURE_MAX_LENGTH)] | None = None


class Software(Open):
    libraries: dict[str, Annotated[str, Field(max_length=200)]] = Field(default_factory=dict)


class EnvironmentSpec(Open):
    hardware: Hardware
    software: Software | None = None


# -- Workload ----------------------------------------------------------------


class DefinitionRef(Open):
    source: SourceKey
    name: DefinitionName
    id: DefinitionId | None = None


class WorkloadCase(Open):
    uuid: NonEmpty | None = None
    axes: dict[str, Any] = Field(default_factory=dict)


class WorkloadSpec(Open):
    definition: DefinitionRef
    cases: list[WorkloadCase] | None = None


# -- Implementation ----------------------------------------------------------


class Artifact(Open):
    """A file the implementation published: its name (a path), where to fetch it, its digest."""

    name: NonEmpty
    url: NonEmpty | None = None
    digest: Digest | None = None


class ImplementationSpec(Open):
    name: NonEmpty
    project: NonEmpty | None = None
    author: NonEmpty | None = None
    revision: NonEmpty | None = None
    artifacts: list[Artifact] = Field(default_factory=list)


# -- BenchmarkRun ------------------------------------------------------------


class Timing(Open):
    latencyNs: dict[str, NonNegative]
    primaryStatistic: Statistic

    @model_validator(mode="after")
    def _primary_is_measured(self) -> Timing:
        value = self.latencyNs.get(self.primaryStatistic)
        if value is None:
            raise ValueError(f"latencyNs has no value for the primary statistic {self.primaryStatistic!r}")
        if value <= 0:
            raise ValueError(f"latencyNs.{self.primaryStatistic} must be greater than zero")
        return self


class SourceNative(Open):
    source: SourceKey
    externalId: Annotated[str, Field(min_length=1, max_length=EXTERNAL_ID_MAX_LENGTH)]
    benchmark: DefinitionName | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    kernelId: DefinitionId | None = None

    @field_validator("metrics")
    @classmethod
    def _finite_metrics(cls, metrics: dict[str, Any]) -> dict[str, Any]:
        for key, value in metrics.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{key} must be a finite number")
        return metrics


class CaseResult(Open):
    status: NonEmpty
    workload: NonEmpty | None = None
    axes: dict[str, Any] = Field(default_factory=dict)
    latencyNs: Positive | None = None
    referenceLatencyNs: Positive | None = None


class RunSpec(Open):
    status: Literal["passed", "failed", "error", "timeout", "measured"]
    observedAt: NonEmpty | None = None
    protocolDigest: ReferenceDigest
    environmentDigest: ReferenceDigest
    workloadDigest: ReferenceDigest | None = None
    implementationDigest: ReferenceDigest | None = None
    timing: Timing | None = None
    sourceNative: SourceNative | None = None
    cases: list[CaseResult] | None = None

    @field_validator("protocolDigest", "environmentDigest", "workloadDigest", "implementationDigest")
    @classmethod
    def _digest_form(cls, value: str | None) -> str | None:
        if value is not None and not is_digest(value):
            raise ValueError("must be 'sha256:' followed by 64 lowercase hex digits")
        return value

    @field_validator("observedAt")
    @classmethod
    def _timestamp(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parsed = _parse_timestamp(value)
        offset = parsed.utcoffset()
        if offset is None:
            raise ValueError("must carry a timezone, e.g. 2026-04-20T20:30:41.723Z")
        if not EARLIEST_OFFSET <= offset <= LATEST_OFFSET:
            raise ValueError("must carry a UTC offset between -12:00 and +14:00, as every time zone does")
        try:
            parsed.astimezone(UTC)
        except OverflowError:
            raise ValueError("must fall between the years 1 and 9999 in UTC") from None
        return value

    @model_validator(mode="after")
    def _ranked_runs_are_timed(self) -> RunSpec:
        if self.status in RANKABLE_STATUSES and self.timing is None:
            raise ValueError(f"a {self.status} run needs timing.latencyNs")
        return self


# The offsets time zones have. ISO 8601 writes up to ±23:59, which PostgreSQL refuses to store beyond ±15:59.
EARLIEST_OFFSET = timedelta(hours=-12)
LATEST_OFFSET = timedelta(hours=14)


def _parse_timestamp(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 timestamp") from None


class Envelope(Closed):
    apiVersion: Literal["kernelindex.dev/v1alpha1"]
    kind: Literal["BenchmarkRun", "BenchmarkProtocol", "ExecutionEnvironment", "Workload", "Implementation"]
    metadata: Metadata
    spec: dict[str, Any]


SPEC_MODELS: dict[str, type[Open]] = {
    "BenchmarkRun": RunSpec,
    "BenchmarkProtocol": ProtocolSpec,
    "ExecutionEnvironment": EnvironmentSpec,
    "Workload": WorkloadSpec,
    "Implementation": ImplementationSpec,
}


class DocumentError(ValueError):
    """A document that does not follow the schema; `field` is a dotted path."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


def validate_document(document: Any, role: str) -> Envelope:
    """Check one document against its kind's model; raise DocumentError naming the field."""
    if not isinstance(document, dict):
        raise DocumentError(role, "must be a JSON object")
    try:
        envelope = Envelope.model_validate(document)
    except ValidationError as error:
        raise _document_error(role, error) from None
    expected = ROLES.get(role)
    if expected and envelope.kind != expected:
        raise DocumentError(f"{role}.kind", f"must be {expected!r}, not {envelope.kind!r}")
    try:
        SPEC_MODELS[envelope.kind].model_validate(envelope.spec)
    except ValidationError as error:
        raise _document_error(f"{role}.spec", error) from None
    return envelope


def _document_error(prefix: str, error: ValidationError) -> DocumentError:
    first = error.errors()[0]
    location = ".".join(str(part) for part in first["loc"])
    field = f"{prefix}.{location}" if location else prefix
    message = first["msg"]
    if first["type"] == "literal_error" and first["loc"] == ("kind",):
        message = f"unknown kind {first['input']!r}; expected one of {', '.join(KINDS)}"
    return DocumentError(field, message)


def parse_timestamp(value: str) -> datetime:
    return _parse_timestamp(value)


SLUG_PATTERN = re.compile(r"[^a-z0-9]+")


def slugify_name(text: str) -> str:
    """'SOL-ExecBench B200 v1.0' -> 'sol-execbench-b200-v1-0' (a metadata.name)."""
    return SLUG_PATTERN.sub("-", text.lower()).strip("-")


def make_document(
    kind: str, name: str, spec: dict[str, Any], title: str | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A document in the record envelope; empty parts are left out, not written as null."""
    metadata: dict[str, Any] = {"name": name}
    if title:
        metadata["title"] = title
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}
