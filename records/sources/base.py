"""What every source adapter shares: the items it yields and the errors it raises.

An adapter reads one import unit (a file, or a SOL-ExecBench problem folder)
and yields items; it never touches a database. The first bad record raises a
RecordError naming the file, the line and the field.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from records.attestation import Attested, PublishedKey
from records.definition import DefinitionFields
from records.errors import RecordError
from records.formats import validated
from records.limits import MAX_DOCUMENT_BYTES, MAX_LINE_BYTES, LimitError, parse_limited
from records.manifest import RunItem, Sealed, seal
from records.schema import DocumentError

Progress = Callable[[int], None] | None
READ_BUFFER = 1 << 20
M = TypeVar("M", bound=BaseModel)

NonEmpty = Annotated[str, Field(min_length=1)]
PositiveMs = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class SourceRecord(BaseModel):
    """A record in a source's own format: the fields an adapter reads are checked strictly (a string
    is not a number), and the many it does not read are ignored, so a source may add fields."""

    model_config = ConfigDict(extra="ignore", strict=True)


@dataclass(frozen=True)
class CaseItem:
    index: int
    uuid: str
    axes: dict[str, Any]
    inputs: dict[str, Any]
    tolerance: dict[str, Any] | None


@dataclass(frozen=True)
class ReferenceItem:
    """A reference row (SOL bound, scoring baseline): shown beside runs, never ranked."""

    kind: str
    hardware: str
    latency_ns: float
    per_case_ns: list[float]


class DefinitionItem(DefinitionFields):
    """A definition as an adapter yields it and runs/ingest.py stores it: its fields and what the index keeps
    beside them."""

    model_config = ConfigDict(frozen=True)

    hf_id: str
    cases: list[CaseItem]
    references: list[ReferenceItem]
    # The digest of the definition's runnable Workload document, where the source gives its reference.
    workload_digest: str = ""


@dataclass(frozen=True)
class BoardItem:
    """A source's own public board for one definition: its score distribution, not runs."""

    source: str
    definition_external_id: str
    hardware: str
    stack_version: str
    scores: list[float]
    top_score: float | None
    top_user: str


@dataclass(frozen=True)
class SkippedItem:
    """Something the file holds that is deliberately not imported, with the reason."""

    line: int | None
    reason: str


@dataclass(frozen=True)
class DocumentItem:
    """A document stored on its own (a definition's Workload, a solution's Implementation), by digest."""

    line: int | None
    sealed: Sealed


@dataclass(frozen=True)
class VersionItem:
    digest: str
    imported_at: datetime
    declared_digests: dict[str, str]


@dataclass(frozen=True)
class StatusChangeItem:
    action: str
    reason: str
    at: datetime


@dataclass(frozen=True)
class RunStateItem:
    """What a dump keeps of a run beside its current manifest (records/sources/dump.py): when it was
    published, its every version, and its withdrawal and withdrawals and restores."""

    line: int | None
    source: str
    external_id: str
    published_at: datetime
    versions: tuple[VersionItem, ...]
    withdrawn_at: datetime | None
    withdrawn_reason: str
    status_changes: tuple[StatusChangeItem, ...]


@dataclass(frozen=True)
class SectionItem:
    """One line of a dump's section (records/sources/dump.py): reruns, evidence, notes, reports.

    The reader checks only the file's sha256 and that the line is JSON; the app
    that owns the section validates and applies it (runs/dump_sections.py).
    """

    path: str
    file: str
    line: int
    value: Any


@dataclass(frozen=True)
class CountedRerun:
    """A dumped rerun whose attestation verified against a key the importing site trusts, and whose line says
    what it attests (records/sources/dump.py)."""

    line: int
    attested: Attested
    key: PublishedKey
    # Verified by a key an operator pinned for the dump's publisher, not by one registered here.
    pinned: bool
    # The digest of the result run its line names (what an attestation signed before result runs were is
    # checked by).
    result_digest: str | None


@dataclass
class DumpChecks:
    """What a dump's reader checked before its sections, for the app that applies them (runs/dump_sections.py):
    who the dump says published it, its folder, and its reruns whose attestations count, or are left out and
    why, by the rerun's number in the dump."""

    publisher: str
    folder: str = ""
    counted: dict[int, CountedRerun] = field(default_factory=dict)
    left_out: dict[int, str] = field(default_factory=dict)


Item = RunItem | DefinitionItem | BoardItem | DocumentItem | SkippedItem | RunStateItem | SectionItem | DumpChecks


class Adapter(Protocol):
    name: str

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]: ...


def read_json_file(path: Path) -> Any:
    """A whole-file JSON document, within the limits of records/limits.py."""
    with path.open("rb") as handle:
        raw = handle.read(MAX_DOCUMENT_BYTES + 1)
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise RecordError(path, None, None, f"larger than {MAX_DOCUMENT_BYTES} bytes, the limit for a JSON document")
    return _parsed(raw, path, None)


def iter_json_lines(path: Path, progress: Progress = None) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSONL file, streamed, each line within the limits."""
    # A large buffer: each read lets other threads run (an import writes while it reads), and
    # getting the interpreter back after a read can take a few milliseconds.
    with _open_binary(path) as handle:
        number = 0
        # At most one byte past the limit is read: a longer line is refused without holding it whole.
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            if progress:
                progress(len(raw))
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise RecordError(path, number, None, f"longer than {MAX_LINE_BYTES} bytes, the limit for a line")
            if not raw.strip():
                continue
            yield number, _parsed(raw, path, number)


def _open_binary(path: Path) -> gzip.GzipFile | BinaryIO:
    """A dump's files are gzip-compressed (records/sources/dump.py); any other file is read as it is."""
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return path.open("rb", buffering=READ_BUFFER)


def _parsed(raw: bytes, path: Path, line: int | None) -> Any:
    try:
        return parse_limited(raw)
    except LimitError as error:
        raise RecordError(path, line, error.field, error.message) from None
    except json.JSONDecodeError as error:
        line = error.lineno if line is None else line
        raise RecordError(path, line, None, f"not valid JSON: {error.msg} (column {error.colno})") from None
    except ValueError as error:
        raise RecordError(path, line, None, f"not valid JSON: {error}") from None
    except UnicodeDecodeError:
        raise RecordError(path, line, None, "not UTF-8 text") from None


def validate_record(model: type[M], value: Any, path: Path, line: int | None, prefix: str = "") -> M:
    """Validate a raw source record; a failure names the source's own field (one rule for every format)."""
    return validated(model, value, path, line, prefix)


def seal_or_fail(value: dict[str, Any], role: str, path: Path, line: int | None) -> Sealed:
    try:
        return seal(value, role)
    except DocumentError as error:
        raise RecordError(path, line, error.field, error.message) from None


def ms_to_ns(value: float) -> float | int:
    """Milliseconds to nanoseconds, dropping float noise (0.175457 ms -> 175457 ns)."""
    ns = round(value * 1_000_000, 3)
    return int(ns) if ns.is_integer() else ns


def utc_timestamp(value: str) -> str:
    """Sources publish naive timestamps that are UTC: mark them so, never shift them."""
    has_offset = value[-6:-5] in {"+", "-"} and value[-3:-2] == ":"
    if value.endswith("Z") or has_offset:
        return value
    return value + "Z"
