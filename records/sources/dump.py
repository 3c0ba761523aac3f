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
before it reads a line, and every rerun's attestation before it reads a run.

A dump carries evidence, not authority: a sha256 the manifest lists is
integrity, not provenance, and the dump's own workers.jsonl.gz cannot vouch
for the attestations beside it (whoever wrote the one wrote the other). An
attestation counts only where it verifies against a key the importing site
trusts (TrustedKeys: its own registry, and keys an operator pinned for the
dump's publisher); the rerun line of one that does not, its result run and
the evidence resting on it are left out, and the import says which and why.
A counted rerun's line must say what its attestation says, or the whole dump
is refused. A run shaped like a rerun's result
(records.rerun.rerun_result_shape) is imported only where a counted
attestation covers it: the result run it signed, or, for an attestation
signed before result runs were, the run of the run and version it names.
It yields a section's lines as SectionItems, JSON checked and nothing more:
the app that owns a section validates its lines (with the line models below
for runs' own) and applies them, with what the reader checked (DumpChecks).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from records.attestation import AttestationError, Attested, PublishedKey, moment, verify_with_key_set
from records.definition import DefinitionFields
from records.errors import RecordError
from records.identity import NATIVE_SOURCE, run_id_for
from records.manifest import manifest_item, seal
from records.rerun import PASSED, RERUN_EXTERNAL_PREFIX, rerun_result_shape
from records.schema import DEFINITION_NAME_MAX_LENGTH, SOURCE_MAX_LENGTH, DocumentError, parse_timestamp
from records.sources.base import (
    BoardItem,
    CaseItem,
    CountedRerun,
    DefinitionItem,
    DocumentItem,
    DumpChecks,
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
# attestation; version 4 evidence changes that name a run's version, not a rerun. Older dumps still read; their
# reruns' results, which nothing attests, are left out.
VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)
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


def manifest_json(files: list[WrittenFile], counts: dict[str, int], sections: list[str], publisher: str = "") -> str:
    """The dump's manifest.json: sorted keys and a fixed layout, so it is reproducible too.

    `sections` are the section files, in the order an import applies them; `publisher` the site that made it
    (its URL), which an importer shows beside the keys the dump lists, as the dump's word."""
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "publisher": publisher,
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
    # The site that says it made the dump (its URL); older dumps name none.
    publisher: str = Field(default="", max_length=200)


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


class DefinitionLine(SourceRecord, DefinitionFields):
    """A definition's line: its fields, camelCase as the dump spells every field, and what the item adds."""

    model_config = ConfigDict(alias_generator=to_camel)

    # The lengths of the index's own columns, which a definition a dump names is stored in.
    source: str = Field(min_length=1, max_length=SOURCE_MAX_LENGTH)
    name: str = Field(min_length=1, max_length=DEFINITION_NAME_MAX_LENGTH)
    hf_id: str
    workload_digest: str
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
    # When its site took the attestation in (a key revoked after that still verifies it); none before it was
    # dumped, when the rerun's finish stands for it.
    attestationRecordedAt: str | None = None


class EvidenceChangeLine(SourceRecord):
    at: str
    # "from" is a Python keyword: the line spells it "from", the model "previous".
    previous: str = Field(alias="from", pattern=r"^(reported|reproduced|not_reproduced)$")
    to: str = Field(pattern=r"^(reported|reproduced|not_reproduced)$")
    # The rerun that made the change; from version 4 none where nothing of the run's version stood any more (a new
    # version no rerun had checked): `version` names that version, and the change is back to "reported".
    rerun: int | None = Field(ge=1)
    version: str | None = Field(default=None, pattern=r"^sha256:[0-9a-f]{64}$")
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
    """Reads a dump folder back: every definition, board, run, version and document it holds, and its sections.

    `trusted` are the worker keys whose attestations count (import_runs passes this site's registry and the
    keys pinned for the dump's publisher); without them none does, and every attested rerun is left out.
    """

    name = "kernelindex"

    def __init__(self, trusted: TrustedKeys | None = None) -> None:
        self.trusted = trusted or TrustedKeys({})

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        manifest = self._manifest(path)
        for name in (*DATA_FILES, *manifest.sections):
            if name not in manifest.files:
                raise RecordError(path / MANIFEST_FILE, None, "files", f"the dump lists no {name}")
        # Every file the manifest lists is checked before a line is read, so a damaged one writes nothing.
        for name, entry in sorted(manifest.files.items()):
            check_sha256(path / name, entry.sha256)
        checks, results = check_reruns(path, manifest, self.trusted)
        try:
            yield from _definitions(path / DEFINITIONS_FILE, progress)
            yield from _boards(path / BOARDS_FILE, progress)
            yield from _runs(path / RUNS_FILE, progress, results)
            yield from _history(path / HISTORY_FILE, progress)
            # Before the sections, which name runs: a rerun's verdict is checked on the document of the run
            # version it reran, which may be an older one than runs.jsonl.gz holds.
            yield from _documents(path / DOCUMENTS_FILE, progress)
            yield checks
            yield from _left_out(checks)
            for name in manifest.sections:
                yield from _section(path, name, progress)
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
            **d.model_dump(exclude={"cases", "references"}),
            cases=[CaseItem(c.index, c.uuid, c.axes, c.inputs, c.tolerance) for c in d.cases],
            references=[ReferenceItem(r.kind, r.hardware, r.latencyNs, r.perCaseNs) for r in d.references],
        )


def _runs(path: Path, progress: Progress, results: dict[str, CountedRerun]) -> Iterator[Item]:
    """The runs; a rerun's result only where a counted attestation covers it (_not_covered)."""
    for line, value in iter_json_lines(path, progress):
        shaped = rerun_result_shape(value) is not None
        item = manifest_item(value, path, line, redigest=False, rerun_result=shaped)
        if shaped and (why := _not_covered(item.run.value, item.run.digest, results, path, line)):
            yield SkippedItem(line, f"{why}: not imported")
            continue
        yield item


def _not_covered(
    run: dict[str, Any], run_digest: str, results: dict[str, CountedRerun], path: Path, line: int
) -> str | None:
    """Why a run shaped like a rerun's result is not imported; None where a counted attestation covers it: the
    result run it signed or, signed before result runs were, its rerun line's result of the run and version
    it names."""
    spec = run["spec"]
    native = spec.get("sourceNative") or {}
    counted = results.get(str(native.get("externalId") or ""))
    if counted is None:
        return "a rerun's result that no attestation this site trusts vouches for"
    attested = counted.attested
    # None for statements signed before result runs were: they signed the harness's result, not the run made of it.
    signed = attested.result_run_digest
    if signed is not None:
        if run_digest != signed:
            said = f"rerun #{attested.predicate.request}'s result run is {run_digest}, but its worker signed {signed}"
            raise RecordError(path, line, "run", said)
        return None
    if spec.get("rerunOf") != {"runId": attested.predicate.run, "digest": attested.run_digest}:
        return f"a result of another run than rerun #{attested.predicate.request}'s attestation names"
    if run_digest != counted.result_digest:
        return f"not the result run rerun #{attested.predicate.request}'s line names"
    return None


class WorkerLine(PublishedKey):
    """A rerun worker's public key (workers.jsonl.gz), as /api/v1/workers publishes it."""


@dataclass(frozen=True)
class TrustedKeys:
    """The worker keys whose attestations an import of a dump counts: this site's registry, and the keys an
    operator pinned for the dump's publisher (import_runs --trust-workers). Never the dump's own key list."""

    registered: Mapping[str, PublishedKey]
    pinned: Mapping[str, PublishedKey] = field(default_factory=dict)

    def key_set(self) -> dict[str, PublishedKey]:
        # A key registered here is read as the registry has it (its name, classes and revocation).
        return {**self.pinned, **self.registered}


def check_reruns(
    folder: Path, manifest: DumpManifest, trusted: TrustedKeys
) -> tuple[DumpChecks, dict[str, CountedRerun]]:
    """Each rerun line's attestation checked against the keys this site trusts, and the counted reruns by the
    external id of the result run their attestation covers.

    An attestation that verifies counts, and its line must say what it attests, or the whole dump is refused
    (attested_line). One that does not verify (an unknown key, a key revoked before the rerun finished, a broken
    signature), and a line that claims a verdict or a result with no attestation, is left out.
    """
    checks = DumpChecks(publisher_label(manifest, folder), str(folder))
    results: dict[str, CountedRerun] = {}
    if RERUNS_FILE not in manifest.sections:
        return checks, results
    keys = trusted.key_set()
    path = folder / RERUNS_FILE
    seen: dict[int, int] = {}
    for line, value in iter_json_lines(path):
        rerun = validate_record(RerunLine, value, path, line)
        if rerun.number in seen:
            raise RecordError(path, line, "number", f"rerun #{rerun.number} is on line {seen[rerun.number]} too")
        seen[rerun.number] = line
        if rerun.attestation is None:
            if rerun.verdict or rerun.resultRun is not None or rerun.state == "succeeded":
                checks.left_out[rerun.number] = "it carries no attestation, so nothing vouches for its outcome"
            continue
        try:
            attested, key = verify_with_key_set(rerun.attestation, keys, recorded_at=_recorded_at(rerun, path, line))
        except AttestationError as error:
            checks.left_out[rerun.number] = f"its attestation does not verify against a key this site trusts: {error}"
            continue
        _check_line(rerun, attested, path, line)
        counted = CountedRerun(line, attested, key, key.keyId not in trusted.registered, rerun.resultDigest)
        result = _result_external_id(attested)
        if result in results:
            said = f"an attestation of the same rerun as line {results[result].line}'s"
            raise RecordError(path, line, "attestation", said)
        checks.counted[rerun.number] = results[result] = counted
    return checks, results


def _recorded_at(rerun: RerunLine, path: Path, line: int) -> datetime | None:
    """When the dump says its site took the attestation in (or the rerun finished): a key revoked after that
    still verifies it, one revoked before does not. Only the dump says so: a stolen key, revoked since, signs
    what a dump dates before its revocation, and only a log of the publisher's would tell."""
    name = "finishedAt" if rerun.attestationRecordedAt is None else "attestationRecordedAt"
    text = rerun.finishedAt if rerun.attestationRecordedAt is None else rerun.attestationRecordedAt
    try:
        return moment(text) if text else None
    except AttestationError as error:
        raise RecordError(path, line, name, str(error)) from None


def attested_line(attested: Attested) -> dict[str, Any]:
    """What a rerun line says of a rerun this attestation decided, field by field: what the site that took it
    in wrote from it (verification.reruns.record_result, and record_failure where the harness wrote no result)."""
    predicate = attested.predicate
    said: dict[str, Any] = {
        "run": predicate.run,
        "runDigest": attested.run_digest,
        "hardware": attested.hardware_class,
        "harnessSeconds": predicate.harnessSeconds,
    }
    result = attested.result
    if result is None:
        failure = {"failureStatus": "HARNESS_ERROR", "failureReason": "the harness produced no result"}
        return said | {"state": "failed", **failure, "verdict": "", "resultRun": None}
    passed = result.get("status") == PASSED
    return said | {
        "state": "succeeded" if passed else "failed",
        "failureStatus": "" if passed else str(result.get("status") or ""),
        "failureReason": "" if passed else str(result.get("reason") or "")[-4000:],
        "resultRun": run_id_for(NATIVE_SOURCE, _result_external_id(attested)),
    }


def _check_line(rerun: RerunLine, attested: Attested, path: Path, line: int) -> None:
    """A counted rerun's line says what its attestation says, or the dump is not what its site published."""
    written = rerun.model_dump()
    for name, value in attested_line(attested).items():
        if written[name] != value:
            said = f"rerun #{rerun.number} says {written[name]!r}, but its attestation gives {value!r}"
            raise RecordError(path, line, name, said)
    signed = attested.result_run_digest
    if signed is not None and rerun.resultDigest != signed:
        said = f"rerun #{rerun.number} names result run {rerun.resultDigest}, but its worker signed {signed}"
        raise RecordError(path, line, "resultDigest", said)


def _result_external_id(attested: Attested) -> str:
    """The external id of the result run of the rerun an attestation answers (records.rerun.rerun_external_id):
    the request's number where its worker ran it, which a mirror's dump may list under another number."""
    return f"{RERUN_EXTERNAL_PREFIX}{attested.predicate.run}/{attested.predicate.request}"


def publisher_label(manifest: DumpManifest, folder: Path) -> str:
    """The dump as the keys it lists are shown: its folder's name, and the site it says made it."""
    return f"dump {folder.name} of {manifest.publisher}" if manifest.publisher else f"dump {folder.name}"


def _left_out(checks: DumpChecks) -> Iterator[SkippedItem]:
    for number, why in sorted(checks.left_out.items()):
        said = f"{RERUNS_FILE}: rerun #{number}, its result run and the evidence resting on it left out: {why}"
        yield SkippedItem(None, said)


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
