"""A submission: the request body in, through the importer `import_runs` uses, runs out.

The body is copied to a file and imported as `import_runs` imports a native
manifest file (runs.ingest.import_unit), so the same reader, limits, digests
and all-or-nothing transaction apply. An adapter around the native one checks
each run against the token's scope as it is read: a run the token may not
submit stops the import before anything is written.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.http import HttpRequest

from api.models import ApiToken
from records.errors import RecordError
from records.limits import MAX_DOCUMENT_BYTES, MAX_LINE_BYTES
from records.manifest import MANIFEST_ROLES, RunItem
from records.sources import ImportUnit
from records.sources.base import Item, Progress
from records.sources.native import ManifestAdapter
from records.summary import summarize
from runs.ingest import ImportResult, import_unit

# A whole submission is held to the limit of one JSON document, JSONL or not.
MAX_BODY_BYTES = MAX_DOCUMENT_BYTES
MAX_RUNS = 1000
READ_CHUNK = 1 << 16
JSON_TYPES = {"application/json"}
JSONL_TYPES = {"application/x-ndjson", "application/jsonl", "application/x-jsonlines", "application/jsonlines"}
# Bodies whose type says nothing useful are told apart by their content.
UNTYPED = {"", "text/plain", "application/octet-stream"}
ACCEPTED_TYPES = sorted(JSON_TYPES | JSONL_TYPES)
# Where an error names a file, a submission names its body.
BODY = "request body"
ARRAY_ITEM = re.compile(r"^\[(\d+)\]\.?")


class SubmissionRefusedError(Exception):
    """A request refused before its manifests are read: its HTTP status, and why."""

    def __init__(self, status: int, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.field = field  # the header at fault, where one is


class OutOfScopeError(RecordError):
    """A run the token may not submit (403, not 422: the manifest itself may be fine)."""


@dataclass
class Accepted:
    result: ImportResult
    runs: list[tuple[str, str, int | None]] = field(default_factory=list)  # (run id, digest, line)

    @property
    def stored_anything(self) -> bool:
        return bool(self.result.created or self.result.updated)


class ScopedManifests:
    """The native manifest adapter, holding each run to the token's scope and noting what it read."""

    def __init__(self, token: ApiToken, accepted: list[tuple[str, str, int | None]], *, redigest: bool) -> None:
        self.inner = ManifestAdapter(redigest=redigest)
        self.name = self.inner.name
        self.token = token
        self.accepted = accepted

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        for item in self.inner.read(path, progress):
            if isinstance(item, RunItem):
                self._check(item, path)
            yield item

    def _check(self, item: RunItem, path: Path) -> None:
        run = summarize(item)
        if (refusal := self.token.out_of_scope(run.source, run.project)) is not None:
            field_name, reason = refusal
            # In a JSON array the run's fields are named after its index ("[2].run..."), as its id field is.
            prefix = item.id_field.split("run.", 1)[0]
            raise OutOfScopeError(path, item.line, prefix + field_name, reason)
        if len(self.accepted) >= MAX_RUNS:
            raise RecordError(path, item.line, None, f"more than {MAX_RUNS} runs; submit them in parts")
        self.accepted.append((run.run_id, run.digest, item.line))


def submit(request: HttpRequest, token: ApiToken, *, redigest: bool = False) -> Accepted:
    """Import the request's manifests; raises SubmissionRefusedError, or RecordError naming the line and field.

    `redigest` is import_runs' --redigest: a manifest whose declared digests were made by another recipe is
    stored under ours, each declared value kept as provenance.
    """
    suffix = _suffix_for(request.content_type or "")
    declared = request.META.get("CONTENT_LENGTH") or ""
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise SubmissionRefusedError(413, _too_large())
    with tempfile.TemporaryDirectory(prefix="kernelindex-submission-") as folder:
        # The import's log names the file: let it name the token that sent it.
        path = Path(folder) / f"api-submission-token-{token.pk}"
        size = _copy_body(request, path)
        if size == 0:
            raise SubmissionRefusedError(422, "the body is empty: send a manifest, or JSON lines of them")
        path = path.rename(path.with_suffix(suffix or _detected_suffix(path)))
        accepted: list[tuple[str, str, int | None]] = []
        result = import_unit(ImportUnit(path, ScopedManifests(token, accepted, redigest=redigest)), in_process=False)
    return Accepted(result, accepted)


def _suffix_for(content_type: str) -> str:
    """.json or .jsonl as the content type says; empty where the content must tell."""
    if content_type in JSON_TYPES:
        return ".json"
    if content_type in JSONL_TYPES:
        return ".jsonl"
    if content_type in UNTYPED:
        return ""
    raise SubmissionRefusedError(
        415, f"a body of type {content_type!r}; send one of {', '.join(ACCEPTED_TYPES)}", "Content-Type"
    )


def _too_large() -> str:
    return f"larger than {MAX_BODY_BYTES} bytes, the limit for a submission; submit the runs in parts"


def _copy_body(request: HttpRequest, path: Path) -> int:
    """Copy the body to a file, refusing it as soon as it passes the limit (never held whole in memory)."""
    size = 0
    with path.open("wb") as out:
        while chunk := request.read(READ_CHUNK):
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise SubmissionRefusedError(413, _too_large())
            out.write(chunk)
    return size


def _detected_suffix(path: Path) -> str:
    """JSON lines when the first line is a JSON value by itself and more lines follow; else one JSON document."""
    with path.open("rb") as handle:
        first = handle.readline(MAX_LINE_BYTES + 1)
        while first and not first.strip():
            first = handle.readline(MAX_LINE_BYTES + 1)
        rest = handle.read(READ_CHUNK)
    stripped = first.strip()
    if not rest.strip() or not stripped.startswith(b"{") or not stripped.endswith(b"}"):
        return ".json"
    return ".jsonl"


@dataclass(frozen=True)
class Refusal:
    """A refused manifest as the API reports it (a SubmissionProblem): the importer's message with its place,
    the field, and where in the submission: its line, manifest and document."""

    detail: str
    field: str | None
    place: dict[str, object]


def refusal(error: RecordError) -> Refusal:
    field_name = error.field or ""
    manifest = None
    if match := ARRAY_ITEM.match(field_name):
        manifest = int(match.group(1))
        field_name = field_name[match.end() :]
    document = field_name.split(".", 1)[0]
    place: dict[str, object] = {
        "line": error.line,
        "manifest": manifest,
        "document": document if document in (*MANIFEST_ROLES, "provenance") else None,
        "message": error.message,
    }
    return Refusal(str(RecordError(BODY, error.line, error.field, error.message)), error.field, place)
