"""A dump's sections: the parts beyond the runs' own files, each owned by the app whose rows it holds.

runs/dumps.py writes the runs' own files (documents, manifests, history,
definitions, boards), then every registered section, and lists the sections in
manifest.json in the order an import applies them; `import_runs` reads them
back in that order, after the runs and their history, in the same transaction.

A section is one file of canonical JSON lines and two functions: `lines`
yields them, sorted by a stable key, each holding only what a public page
shows; `apply` writes a batch of them for the runs the import created (a run
the database held before keeps its own reruns, notes and reports), keeping
their dates. runs registers none of its own: the workers, reruns and evidence
are verification's rows (verification/dump_sections.py), the community's notes
and the issue reports' statuses attestations' (attestations/dump_sections.py),
and runs imports neither app (tests/verification/test_boundaries.py,
tests/web/test_package_layers.py): each registers its sections from its
AppConfig.ready. This registry is the whole contract between them. A dump
holding a section this site does not register is refused whole.

Never in a section: who asked, moderated or decided (those map to no one in a
mirror), contact details, network addresses, texts the pages do not show
(a report's body, a rerun's log), notes not approved, reruns still queued or
running (a mirror would send them to its own workers).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from django.core.management.color import no_style
from django.db import connection
from pydantic import BaseModel

from records.attestation import PublishedKey
from records.errors import RecordError
from records.schema import parse_timestamp
from records.sources import dump as dump_format
from records.sources.base import DumpChecks, SectionItem, validate_record
from runs.models import Run, RunVersion
from runs.serializers import utc_text

CHUNK = 1000
M = TypeVar("M", bound=BaseModel)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DumpSection:
    file: str
    # Sections are written, listed and applied by this, then by file name (reruns before the evidence naming them).
    order: int
    # The manifest's count of its lines.
    count: str
    # Its paragraph in the dump's README.txt: the file's name, then what a line holds.
    readme: str
    lines: Callable[[], Iterator[str]]
    apply: Callable[[SectionBatch], None]
    # Once every section of an import is in (SectionImport.finish): what is left to settle across sections.
    finish: Callable[[SectionImport], None] | None = None
    # The worker keys this site vouches for, by key id (its own registry, with revocations): an import counts
    # a dumped rerun's attestation only against these and the keys an operator pins (trusted_keys).
    vouches: Callable[[], Mapping[str, PublishedKey]] | None = None


SECTIONS: dict[str, DumpSection] = {}


def register_section(section: DumpSection) -> None:
    """Add a section to every dump made from now on, and let imports read it; registering again replaces it."""
    SECTIONS[section.file] = section


def registered_sections() -> list[DumpSection]:
    return sorted(SECTIONS.values(), key=lambda section: (section.order, section.file))


# -- importing -------------------------------------------------------------------------


@dataclass
class SectionBatch:
    """Lines of one section, in file order, and what applying them needs to know of the import so far."""

    items: list[SectionItem]
    importing: SectionImport

    def validated(self, model: type[M]) -> list[tuple[SectionItem, M]]:
        return [(item, validate_record(model, item.value, Path(item.path), item.line)) for item in self.items]

    def created_runs(self, run_ids: Iterable[str]) -> dict[str, int]:
        return self.importing.created_runs(run_ids)

    def error(self, item: SectionItem, field: str | None, message: str) -> RecordError:
        return RecordError(Path(item.path), item.line, field, message)


@dataclass
class SectionImport:
    """Collects a dump's section lines as the import reads them and applies them a batch at a time."""

    import_log_id: int | None
    pending: list[SectionItem] = field(default_factory=list)
    # What the reader checked of the dump's reruns before its sections (records.sources.dump.check_reruns);
    # until it says, no attestation counts.
    checks: DumpChecks = field(default_factory=lambda: DumpChecks(""))
    # A dumped rerun's number -> (its row here, its run's row), for the evidence changes that name it.
    reruns: dict[int, tuple[int, int]] = field(default_factory=dict)
    result_runs: set[int] = field(default_factory=set)
    # Runs whose evidence a line set, or whose line was left out; runs a rerun of which was decided again under
    # this site's rule (their level is the rule's, not the line's).
    evidence_lines: set[int] = field(default_factory=set)
    left_out_evidence: set[int] = field(default_factory=set)
    redecided: set[int] = field(default_factory=set)
    # What was deliberately not imported, and why, for the import's result.
    skipped: list[str] = field(default_factory=list)

    def add(self, item: SectionItem) -> None:
        if item.file not in SECTIONS:
            raise RecordError(Path(item.path), None, None, "a section this site does not read; nothing was imported")
        if self.pending and (self.pending[0].file != item.file or len(self.pending) >= CHUNK):
            self.flush()
        self.pending.append(item)

    def flush(self) -> None:
        batch, self.pending = self.pending, []
        if batch:
            SECTIONS[batch[0].file].apply(SectionBatch(batch, self))

    def finish(self) -> None:
        """Apply what is left, then each section's finish (verification's: the evidence rule on the runs whose
        reruns no evidence line accounted for)."""
        self.flush()
        for section in registered_sections():
            if section.finish is not None:
                section.finish(self)

    def created_runs(self, run_ids: Iterable[str]) -> dict[str, int]:
        """Run id -> row of the runs among these that this import created: every version of theirs is its own."""
        runs = dict(Run.objects.filter(run_id__in=set(run_ids)).values_list("run_id", "pk"))
        older = RunVersion.objects.filter(run_id__in=list(runs.values())).exclude(import_log_id=self.import_log_id)
        known = set(older.values_list("run_id", flat=True))
        return {run_id: pk for run_id, pk in runs.items() if pk not in known}


def moment(batch: SectionBatch, item: SectionItem, text: str | None, field: str) -> datetime | None:
    return None if text is None else timestamp(batch, item, text, field)


def timestamp(batch: SectionBatch, item: SectionItem, text: str, field: str) -> datetime:
    try:
        return parse_timestamp(text)
    except ValueError:
        raise batch.error(item, field, f"not an ISO 8601 time: {text!r}") from None


def iso(value: datetime | None) -> str | None:
    return utc_text(value)


def reset_sequence(model: type[Any]) -> None:
    """After rows were written with their own ids, PostgreSQL's sequence is moved past them (SQLite needs not)."""
    statements = connection.ops.sequence_reset_sql(no_style(), [model])
    if statements:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)


def trusted_keys(pinned: Mapping[str, PublishedKey] | None = None) -> dump_format.TrustedKeys:
    """The worker keys whose attestations count here: the keys the registered sections vouch for (this site's
    registry, with its revocations: verification's workers section), and the keys an operator pinned for a
    dump's publisher (import_runs and verify_attestations --trust-workers). Never a key stored from a dump: a
    dump's own key list is provenance."""
    registered: dict[str, PublishedKey] = {}
    for section in registered_sections():
        if section.vouches is not None:
            registered.update(section.vouches())
    return dump_format.TrustedKeys(registered, dict(pinned or {}))
