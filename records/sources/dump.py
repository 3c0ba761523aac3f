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
- `README.txt`: this, for people.

Every JSON line is canonical (RFC 8785) and every file is sorted, and the
gzip headers carry no name and no time, so the same index always gives the
same bytes. The reader checks every file against the manifest's sha256
before it reads a line.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from pydantic import Field

from records.errors import RecordError
from records.manifest import manifest_item, seal
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
    SourceRecord,
    StatusChangeItem,
    VersionItem,
    iter_json_lines,
    read_json_file,
    validate_record,
)

FORMAT = "kernelindex-dump"
VERSION = 1
MANIFEST_FILE = "manifest.json"
README_FILE = "README.txt"
DEFINITIONS_FILE = "definitions.jsonl.gz"
BOARDS_FILE = "boards.jsonl.gz"
RUNS_FILE = "runs.jsonl.gz"
HISTORY_FILE = "history.jsonl.gz"
DOCUMENTS_FILE = "documents.jsonl.gz"
# In the order an import reads them: definitions and boards first, so that runs find them; the runs'
# history once the runs are in; the documents last, when nearly all of them are stored already.
DATA_FILES = (DEFINITIONS_FILE, BOARDS_FILE, RUNS_FILE, HISTORY_FILE, DOCUMENTS_FILE)
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


def manifest_json(files: list[WrittenFile], counts: dict[str, int]) -> str:
    """The dump's manifest.json: sorted keys and a fixed layout, so it is reproducible too."""
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "counts": counts,
        "files": {f.name: {"sha256": f.sha256, "bytes": f.bytes, "lines": f.lines} for f in files},
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
        for name in DATA_FILES:
            if name not in manifest.files:
                raise RecordError(path / MANIFEST_FILE, None, "files", f"the dump lists no {name}")
            check_sha256(path / name, manifest.files[name].sha256)
        try:
            yield from _definitions(path / DEFINITIONS_FILE, progress)
            yield from _boards(path / BOARDS_FILE, progress)
            yield from _runs(path / RUNS_FILE, progress)
            yield from _history(path / HISTORY_FILE, progress)
            yield from _documents(path / DOCUMENTS_FILE, progress)
        except (OSError, EOFError) as error:  # a file whose sha256 matched, but whose gzip stream is broken
            raise RecordError(path, None, None, f"cannot decompress: {error}") from None

    def _manifest(self, path: Path) -> DumpManifest:
        manifest_path = path / MANIFEST_FILE
        manifest = validate_record(DumpManifest, read_json_file(manifest_path), manifest_path, None)
        if manifest.format != FORMAT or manifest.version != VERSION:
            raise RecordError(
                manifest_path, None, "version", f"a {manifest.format} version {manifest.version}; this reads {VERSION}"
            )
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


def _runs(path: Path, progress: Progress) -> Iterator[Item]:
    for line, value in iter_json_lines(path, progress):
        yield manifest_item(value, path, line, redigest=False)


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


def _documents(path: Path, progress: Progress) -> Iterator[DocumentItem]:
    for line, value in iter_json_lines(path, progress):
        try:
            yield DocumentItem(line, seal(value, "document"))
        except DocumentError as error:
            raise RecordError(path, line, error.field, error.message) from None
