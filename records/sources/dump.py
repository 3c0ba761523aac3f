# The line models spell fields as the dump's JSON does (camelCase), as records/schema.py does.
# ruff: noqa: N815
"""KernelIndex's own dump: the whole index as a folder of gzip-compressed JSON lines, and its reader.

`manage.py dump` writes one (runs/dumps.py); `manage.py import_runs DUMP_FOLDER`
reads it back as one import unit, all or nothing. The folder holds:

- `manifest.json`: the format and its version, counts, and each file's sha256;
- `definitions.jsonl.gz`: each definition with its cases and reference rows;
- `boards.jsonl.gz`: each source board (a source's own score distribution);
- `runs.jsonl.gz`: each run's current version as its canonical manifest;
- `history.jsonl.gz`: each run's publication date, every version (digest,
  import time, declared digests), its withdrawal and its withdrawals and restores;
- `documents.jsonl.gz`: every stored document, one canonical JSON a line, by digest;
- from version 2, the sections the manifest lists under `sections`, in the
  order an import applies them: from version 3 `workers.jsonl.gz` (the rerun
  workers' public keys), then `reruns.jsonl.gz` (finished reruns, by number,
  from version 3 each with its worker's signed attestation) and
  `evidence.jsonl.gz` (each run's evidence level and its changes), whose lines
  are described here, then the sections other apps register (attestations:
  `notes.jsonl.gz`, `reports.jsonl.gz`);
- `README.txt`: this, for people.

Every JSON line is canonical (RFC 8785) and every file is sorted, and the
gzip headers carry no name and no time, so the same index always gives the
same bytes. The reader checks every file against the manifest's sha256
before it reads a line, and every rerun's attestation against the dump's
worker keys before it reads a run: a run shaped like a rerun's result
(records.rerun.rerun_result_shape) is imported only where a rerun's verified
attestation names the run it reran, and the rerun line names it as its
result. It yields a section's lines as SectionItems, JSON checked and
nothing more: the app that owns a section validates its lines (with the line
models below for runs' own) and applies them.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from pydantic import Field

from records.attestation import AttestationError, PublishedKey, key_set, moment, verify_with_key_set
from records.errors import RecordError
from records.manifest import manifest_item, seal
from records.rerun import RERUN_EXTERNAL_PREFIX, rerun_result_shape
from records.schema import DocumentError, parse_timestamp
from records.sources.base import (
    BoardItem,
    CaseItem,
    DefinitionItem,
    DocumentItem,
    Item,
    Progress,
    ReferenceItem,
    RunStateItem,
    SectionItem,
    SkippedItem,
    SourceRecord,
    StatusChangeItem,
    VersionItem,
    iter_json_lines,
    read_json_file,
    validate_record,
)

FORMAT = "kernelindex-dump"
# Version 2 added the sections (reruns, evidence, notes, reports); version 3 the workers' keys and each rerun's
# attestation. Older dumps still read; their reruns' results, which nothing attests, are left out.
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
MANIFEST_FILE = "manifest.json"
README_FILE = "README.txt"
DEFINITIONS_FILE = "definitions.jsonl.gz"
BOARDS_FILE = "boards.jsonl.gz"
RUNS_FILE = "runs.jsonl.gz"
HISTORY_FILE = "history.jsonl.gz"
DOCUMENTS_FILE = "documents.jsonl.gz"
WORKERS_FILE = "workers.jsonl.gz"
RERUNS_FILE = "reruns.jsonl.gz"
EVIDENCE_FILE = "evidence.jsonl.gz"
# In the order an import reads them: definitions and boards first, so that runs find them; the runs'
# history once the runs are in; the documents last, when nearly all of them are stored already.
DATA_FILES = (DEFINITIONS_FILE, BOARDS_FILE, RUNS_FILE, HISTORY_FILE, DOCUMENTS_FILE)
DATA_FILE_NAME = re.compile(r"^[a-z]+\.jsonl\.gz$")
HASH_CHUNK = 1 << 20
COMPRESS_LEVEL = 6


# -- writing -----------------------------------------------------------------------


@dataclass
class WrittenFile:
    name: str
    sha256: str
    bytes: int
    lines: int


class _Hashing:
    """A binary file that hashes and counts what is written through it."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.size += len(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


def write_lines(folder: Path, name: str, lines: Iterator[str]) -> WrittenFile:
    """Write canonical JSON lines gzip-compressed, with no file name and time 0 in the header (reproducible)."""
    count = 0
    with (folder / name).open("wb") as raw:
        hashing = _Hashing(raw)
        with gzip.GzipFile(filename="", mode="wb", fileobj=hashing, mtime=0, compresslevel=COMPRESS_LEVEL) as out:
            for line in lines:
                out.write(line.encode("utf-8") + b"\n")
                count += 1
    return WrittenFile(name, hashing.hash.hexdigest(), hashing.size, count)


def manifest_json(files: list[WrittenFile], counts: dict[str, int], sections: list[str]) -> str:
    """The dump's manifest.json: sorted keys and a fixed layout, so it is reproducible too.

    `sections` are the section files, in the order an import applies them."""
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "counts": counts,
        "files": {f.name: {"sha256": f.sha256, "bytes": f.bytes, "lines": f.lines} for f in files},
        "sections": sections,
    }
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


# -- reading -----------------------------------------------------------------------


class DumpFile(SourceRecord):
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)
    lines: int = Field(ge=0)


class DumpManifest(SourceRecord):
    format: str
    version: int
    files: dict[str, DumpFile]
    counts: dict[str, int] = Field(default_factory=dict)
    sections: list[str] = Field(default_factory=list)


class CaseLine(SourceRecord):
    index: int = Field(ge=0)
    uuid: str
    axes: dict[str, Any]
    inputs: dict[str, Any]
    tolerance: dict[str, Any] | None


class ReferenceLine(SourceRecord):
    kind: str
    hardware: str
    latencyNs: float
    perCaseNs: list[float]


class DefinitionLine(SourceRecord):
    source: str = Field(min_length=1, max_length=32)
    name: str = Field(min_length=1, max_length=255)
    externalId: str
    title: str
    description: str
    subset: str
    hfId: str
    axes: dict[str, Any]
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    workloadDigest: str
    cases: list[CaseLine]
    references: list[ReferenceLine]


class BoardLine(SourceRecord):
    source: str = Field(min_length=1, max_length=32)
    definitionExternalId: str
    hardware: str
    stackVersion: str
    scores: list[float]
    topScore: float | None
    topUser: str


class VersionLine(SourceRecord):
    digest: str
    importedAt: str
    declaredDigests: dict[str, str]


class WithdrawalLine(SourceRecord):
    at: str
    reason: str


class StatusChangeLine(SourceRecord):
    action: str = Field(pattern=r"^(withdrawn|restored)$")
    reason: str
    at: str


class RerunLine(SourceRecord):
    """A finished KernelIndex rerun as its run page shows it (reruns.jsonl.gz), by its public number.

    Never who asked for it, the worker that ran it, or its log. Only finished
    reruns are dumped: a queued one imported into a mirror would be sent to
    the mirror's own workers.
    """

    number: int = Field(ge=1)
    run: str = Field(min_length=1, max_length=16)
    runDigest: str
    hardware: str = Field(max_length=64)
    state: str = Field(pattern=r"^(succeeded|failed|cancelled)$")
    reason: str
    requestedAt: str
    startedAt: str | None
    finishedAt: str | None
    retryAt: str | None
    attempts: int = Field(ge=0)
    harnessSeconds: float | None
    failureStatus: str = Field(max_length=32)
    failureReason: str
    verdict: str = Field(pattern=r"^(reproduced|not_reproduced|)$")
    verdictReason: str
    ruleVersion: int | None = Field(ge=0, le=32767)
    tolerance: float | None
    # The run that holds the rerun's measurement (a run of source kernelindex in runs.jsonl.gz), and its digest.
    resultRun: str | None
    resultDigest: str | None
    # The DSSE envelope its worker signed (records.attestation), whose figures decided the verdict; none before
    # version 3, and none for a rerun that ended without one (cancelled, or its worker lost).
    attestation: dict[str, Any] | None = None


class EvidenceChangeLine(SourceRecord):
    at: str
    # "from" is a Python keyword: the line spells it "from", the model "previous".
    previous: str = Field(alias="from", pattern=r"^(reported|reproduced|not_reproduced)$")
    to: str = Field(pattern=r"^(reported|reproduced|not_reproduced)$")
    rerun: int = Field(ge=1)
    ruleVersion: int | None = Field(ge=0, le=32767)
    tolerance: float | None


class EvidenceLine(SourceRecord):
    """A run's evidence level and every change of it, oldest first (evidence.jsonl.gz), for each run whose
    level is not "reported" or has ever changed."""

    run: str = Field(min_length=1, max_length=16)
    level: str = Field(pattern=r"^(reported|reproduced|not_reproduced)$")
    changes: list[EvidenceChangeLine]


class HistoryLine(SourceRecord):
    source: str = Field(min_length=1, max_length=32)
    externalId: str = Field(min_length=1, max_length=255)
    publishedAt: str
    versions: list[VersionLine] = Field(min_length=1)
    withdrawn: WithdrawalLine | None
    statusChanges: list[StatusChangeLine]


def is_dump_folder(path: Path) -> bool:
    """A folder whose manifest.json says it is a KernelIndex dump; never raises."""
    manifest = path / MANIFEST_FILE
    if not path.is_dir() or not manifest.is_file() or manifest.stat().st_size > 1 << 20:
        return False
    try:
        value = json.loads(manifest.read_bytes())
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("format") == FORMAT


class DumpAdapter:
    """Reads a dump folder back: every definition, board, run, version and document it holds."""

    name = "kernelindex"

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        manifest = self._manifest(path)
        for name in (*DATA_FILES, *manifest.sections):
            if name not in manifest.files:
                raise RecordError(path / MANIFEST_FILE, None, "files", f"the dump lists no {name}")
        # Every file the manifest lists is checked before a line is read, so a damaged one writes nothing.
        for name, entry in sorted(manifest.files.items()):
            check_sha256(path / name, entry.sha256)
        attested = attested_results(path, manifest)
        try:
            yield from _definitions(path / DEFINITIONS_FILE, progress)
            yield from _boards(path / BOARDS_FILE, progress)
            yield from _runs(path / RUNS_FILE, progress, attested)
            yield from _history(path / HISTORY_FILE, progress)
            # After the runs' history (which needs the runs), before the documents: a section's lines
            # name runs, never documents.
            for name in manifest.sections:
                yield from _section(path, name, progress)
            yield from _documents(path / DOCUMENTS_FILE, progress)
        except (OSError, EOFError) as error:  # a file whose sha256 matched, but whose gzip stream is broken
            raise RecordError(path, None, None, f"cannot decompress: {error}") from None

    def _manifest(self, path: Path) -> DumpManifest:
        manifest_path = path / MANIFEST_FILE
        manifest = validate_record(DumpManifest, read_json_file(manifest_path), manifest_path, None)
        if manifest.format != FORMAT or manifest.version not in READABLE_VERSIONS:
            readable = " and ".join(str(v) for v in READABLE_VERSIONS)
            raise RecordError(
                manifest_path,
                None,
                "version",
                f"a {manifest.format} version {manifest.version}; this reads versions {readable}",
            )
        for name in manifest.files:
            if not DATA_FILE_NAME.match(name):  # a name is a file in this folder, never a path out of it
                raise RecordError(manifest_path, None, "files", f"{name!r} is not a dump file's name")
        for name in manifest.sections:
            if name in DATA_FILES or manifest.sections.count(name) > 1:
                raise RecordError(manifest_path, None, "sections", f"{name} cannot be a section")
        return manifest


def check_sha256(path: Path, expected: str) -> None:
    if not path.is_file():
        raise RecordError(path, None, None, "listed in the dump's manifest, but missing")
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            digest.update(chunk)
    if digest.hexdigest() != expected:
        raise RecordError(path, None, None, f"sha256 {digest.hexdigest()}, but the dump's manifest says {expected}")


def _definitions(path: Path, progress: Progress) -> Iterator[DefinitionItem]:
    for line, value in iter_json_lines(path, progress):
        d = validate_record(DefinitionLine, value, path, line)
        yield DefinitionItem(
            source=d.source,
            name=d.name,
            external_id=d.externalId,
            title=d.title,
            description=d.description,
            subset=d.subset,
            hf_id=d.hfId,
            axes=d.axes,
            inputs=d.inputs,
            outputs=d.outputs,
            cases=[CaseItem(c.index, c.uuid, c.axes, c.inputs, c.tolerance) for c in d.cases],
            references=[ReferenceItem(r.kind, r.hardware, r.latencyNs, r.perCaseNs) for r in d.references],
            workload_digest=d.workloadDigest,
        )


def _runs(path: Path, progress: Progress, attested: dict[str, RerunLine]) -> Iterator[Item]:
    """The runs; a rerun's result only where a verified attestation vouches for it (attested_results)."""
    for line, value in iter_json_lines(path, progress):
        shaped = rerun_result_shape(value) is not None
        item = manifest_item(value, path, line, redigest=False, rerun_result=shaped)
        if shaped and not _attested_result(item.run.value, attested.get(item.run.digest)):
            yield SkippedItem(line, "a rerun's result that no attestation in this dump vouches for: not imported")
            continue
        yield item


def _attested_result(run: dict[str, Any], rerun: RerunLine | None) -> bool:
    """Whether the run is the result its rerun line names: of the run and version the attestation names."""
    if rerun is None:
        return False
    spec = run["spec"]
    native = spec.get("sourceNative") or {}
    return spec.get("rerunOf") == {"runId": rerun.run, "digest": rerun.runDigest} and native.get("externalId") == (
        f"{RERUN_EXTERNAL_PREFIX}{rerun.run}/{rerun.number}"
    )


class WorkerLine(PublishedKey):
    """A rerun worker's public key (workers.jsonl.gz), as /api/v1/workers publishes it."""


def attested_results(folder: Path, manifest: DumpManifest) -> dict[str, RerunLine]:
    """The reruns whose attestation verifies against the dump's worker keys, by their result run's digest.

    An attestation that does not verify, or that names another run, version or class than its rerun line,
    refuses the whole dump: the dump is not what its site published. A key revoked after the site took an
    attestation in (the rerun's finish) leaves it standing.
    """
    if RERUNS_FILE not in manifest.sections:
        return {}
    keys: dict[str, PublishedKey] = {}
    if WORKERS_FILE in manifest.sections:
        workers = [value for _, value in iter_json_lines(folder / WORKERS_FILE)]
        try:
            keys = key_set(workers)
        except AttestationError as error:
            raise RecordError(folder / WORKERS_FILE, None, None, str(error)) from None
    attested: dict[str, RerunLine] = {}
    path = folder / RERUNS_FILE
    for line, value in iter_json_lines(path):
        rerun = validate_record(RerunLine, value, path, line)
        if rerun.attestation is None or rerun.resultDigest is None:
            continue
        try:
            statement, _ = verify_with_key_set(
                rerun.attestation, keys, recorded_at=moment(rerun.finishedAt) if rerun.finishedAt else None
            )
        except AttestationError as error:
            raise RecordError(path, line, "attestation", f"rerun #{rerun.number}: {error}") from None
        named = (statement.predicate.run, statement.run_digest, statement.hardware_class)
        if named != (rerun.run, rerun.runDigest, rerun.hardware):
            said = f"rerun #{rerun.number}: its attestation is of run {named[0]} ({named[1]}) on {named[2]}"
            raise RecordError(path, line, "attestation", said)
        attested[rerun.resultDigest] = rerun
    return attested


def _boards(path: Path, progress: Progress) -> Iterator[BoardItem]:
    for line, value in iter_json_lines(path, progress):
        b = validate_record(BoardLine, value, path, line)
        yield BoardItem(b.source, b.definitionExternalId, b.hardware, b.stackVersion, b.scores, b.topScore, b.topUser)


def _history(path: Path, progress: Progress) -> Iterator[RunStateItem]:
    for line, value in iter_json_lines(path, progress):
        h = validate_record(HistoryLine, value, path, line)

        def moment(text: str, field: str, line: int = line) -> datetime:
            try:
                return parse_timestamp(text)
            except ValueError:
                raise RecordError(path, line, field, f"not an ISO 8601 time: {text!r}") from None

        yield RunStateItem(
            line=line,
            source=h.source,
            external_id=h.externalId,
            published_at=moment(h.publishedAt, "publishedAt"),
            versions=tuple(
                VersionItem(v.digest, moment(v.importedAt, f"versions.{i}.importedAt"), v.declaredDigests)
                for i, v in enumerate(h.versions)
            ),
            withdrawn_at=moment(h.withdrawn.at, "withdrawn.at") if h.withdrawn else None,
            withdrawn_reason=h.withdrawn.reason if h.withdrawn else "",
            status_changes=tuple(
                StatusChangeItem(c.action, c.reason, moment(c.at, f"statusChanges.{i}.at"))
                for i, c in enumerate(h.statusChanges)
            ),
        )


def _section(folder: Path, name: str, progress: Progress) -> Iterator[SectionItem]:
    path = folder / name
    for line, value in iter_json_lines(path, progress):
        yield SectionItem(str(path), name, line, value)


def _documents(path: Path, progress: Progress) -> Iterator[DocumentItem]:
    for line, value in iter_json_lines(path, progress):
        try:
            yield DocumentItem(line, seal(value, "document"))
        except DocumentError as error:
            raise RecordError(path, line, error.field, error.message) from None
