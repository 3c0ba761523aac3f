"""Dumps of the whole index: writing one (`manage.py dump`, daily by Celery beat), listing and serving them,
and applying a dump's run history when `import_runs` reads one back.

The format (file names, line shapes, the reader) is records/sources/dump.py's.
What a dump holds: every document, every definition with its cases and
reference rows, every source board, every run's current manifest, and every
run's history (publication date, every version with its import time and
declared digests, its withdrawal, its withdrawals and restores); then its
sections (runs/dump_sections.py): finished reruns with their verdicts,
each run's evidence level and its changes, and the sections attestations
registers (approved notes, issue reports' public status). A rerun's result
run is in it, as a run of source `kernelindex`. What it never holds: who
asked, moderated or decided anything, contact details and addresses, notes
not approved, a report's text, reruns' logs and workers, reruns still queued
or running, import logs, API tokens and accounts.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from itertools import islice
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Prefetch
from django.http import Http404

from records.canonical import canonical_text
from records.identity import run_id_for
from records.manifest import manifest_text
from records.sources import dump as dump_format
from records.sources.base import DumpChecks, RunStateItem, SectionItem
from runs.dump_sections import SectionImport, registered_sections
from runs.figures import refresh_version_counts
from runs.models import (
    Definition,
    Document,
    ReferenceRow,
    Run,
    RunStatusChange,
    RunVersion,
    SourceBoard,
    WorkloadCase,
)
from runs.selectors import references_of

CHUNK = 1000
# The daily dumps' folder names: kernelindex-2026-08-24. Nothing else in DUMPS_DIR is listed or served.
DUMP_NAME = re.compile(r"^kernelindex-\d{4}-\d{2}-\d{2}$")
FILE_NAME = re.compile(r"^[A-Za-z]+(\.jsonl\.gz|\.json|\.txt)$")
README = """KernelIndex dump, format {format} version {version}

Each file but this one and manifest.json is gzip-compressed text, one JSON
document per line, in the canonical form of RFC 8785 (JCS). manifest.json
gives the format and version, the site that made it (publisher), counts,
and each file's sha256, size and line count; check the sha256 before
trusting a file. A sha256 says a file is whole, not who wrote it: the
reruns' attestations are what vouch for their figures, checked against
keys you hold from the publisher, never against this dump's own.

documents.jsonl.gz    every stored document (runs, protocols, environments,
                      workloads, implementations), sorted by digest; a
                      document's digest is "sha256:" + the hex sha256 of its
                      line, without the newline
runs.jsonl.gz         each run's current version as its canonical manifest
                      {{run, protocol, environment, workload?, implementation?,
                      provenance?}}, sorted by run id
history.jsonl.gz      each run's publication time, every version (digest,
                      import time, digests declared by its source), its
                      withdrawal (time, reason) and its withdrawals and
                      restores, sorted by run id
definitions.jsonl.gz  each benchmark definition with its cases and reference
                      rows (SOL bound, scoring baseline), sorted by source
                      and name
boards.jsonl.gz       each source's own public board (its score
                      distribution), sorted
{sections}
manifest.json lists these last files under "sections", in the order an
import applies them. Times are UTC, ISO 8601.

Never in a dump: who asked for a rerun, moderated a note or a report, or
withdrew a run (a mirror's rows name no one); e-mail addresses, contacts and
network addresses; notes awaiting moderation or rejected; a report's text
and the moderators' resolution note; reruns' logs and worker names; reruns
still queued or running (they are in the next day's dump once finished);
import logs, API tokens and accounts.

`python manage.py import_runs FOLDER` reads this folder back, all or nothing.
Into an empty database it reproduces every digest and every run page, with
its evidence level, reruns (under the same numbers), evidence history,
notes and reports' statuses; runs already in the database keep their own
dates, status, reruns and notes.

The same index always gives the same bytes: lines are sorted, and no gzip
header carries a file name or a time.
"""


# -- writing -----------------------------------------------------------------------


def dump_name(day: date) -> str:
    return f"kernelindex-{day.isoformat()}"


def write_dump(folder: Path) -> dict[str, Any]:
    """Write the whole index into `folder` (created; files already there are replaced); return its manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    with one_snapshot():
        return _write_dump(folder)


@contextmanager
def one_snapshot() -> Iterator[None]:
    """On PostgreSQL, every query of the dump reads one snapshot, so an import committing meanwhile cannot
    leave a run in the dump without its documents. SQLite (development) reads as it goes: a transaction there
    would hold the write lock for as long as the dump takes."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        yield
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def _write_dump(folder: Path) -> dict[str, Any]:
    counts = {
        "definitions": Definition.objects.count(),
        "boards": SourceBoard.objects.count(),
        "runs": Run.objects.count(),
        "versions": RunVersion.objects.count(),
        "documents": Document.objects.count(),
        "withdrawn": Run.objects.exclude(withdrawn_at=None).count(),
    }
    writers = {
        dump_format.DEFINITIONS_FILE: definition_lines,
        dump_format.BOARDS_FILE: board_lines,
        dump_format.RUNS_FILE: run_lines,
        dump_format.HISTORY_FILE: history_lines,
        dump_format.DOCUMENTS_FILE: document_lines,
    }
    files = [dump_format.write_lines(folder, name, lines()) for name, lines in writers.items()]
    sections = registered_sections()
    for section in sections:
        written = dump_format.write_lines(folder, section.file, section.lines())
        files.append(written)
        counts[section.count] = written.lines
    readme = README.format(
        format=dump_format.FORMAT,
        version=dump_format.VERSION,
        sections="".join(f"{section.file:<22}{section.readme}\n" for section in sections),
    )
    (folder / dump_format.README_FILE).write_text(readme, encoding="utf-8")
    sections_listed = [section.file for section in sections]
    manifest = dump_format.manifest_json(files, counts, sections_listed, publisher=settings.SITE_URL)
    (folder / dump_format.MANIFEST_FILE).write_text(manifest, encoding="utf-8")
    return {"files": files, "counts": counts}


def document_lines() -> Iterator[str]:
    rows = Document.objects.order_by("digest").values_list("canonical", flat=True)
    yield from rows.iterator(chunk_size=CHUNK)


def run_lines() -> Iterator[str]:
    """Each run's current manifest, by run id, its documents read a chunk of runs at a time."""
    runs = Run.objects.order_by("run_id").values_list("digest", "declared_digests").iterator(chunk_size=CHUNK)
    while chunk := list(islice(runs, CHUNK)):
        run_texts = Document.objects.in_bulk([d for d, _ in chunk])
        references = {d: references_of(run_texts[d].value) for d, _ in chunk}
        others = Document.objects.in_bulk(list({d for refs in references.values() for d in refs.values()}))
        for run_digest, declared in chunk:
            texts = {"run": run_texts[run_digest].canonical}
            texts.update({role: others[d].canonical for role, d in references[run_digest].items() if d in others})
            yield manifest_text(texts, declared)


def history_lines() -> Iterator[str]:
    versions = Prefetch("versions", queryset=RunVersion.objects.order_by("imported_at", "id"))
    changes = Prefetch("status_changes", queryset=RunStatusChange.objects.defer("by").order_by("at", "id"))
    runs = Run.objects.order_by("run_id").prefetch_related(versions, changes)
    for run in runs.iterator(chunk_size=CHUNK):
        yield canonical_text(
            {
                "source": run.source,
                "externalId": run.external_id,
                "publishedAt": _iso(run.published_at),
                "versions": [
                    {"digest": v.digest, "importedAt": _iso(v.imported_at), "declaredDigests": v.declared_digests}
                    for v in run.versions.all()
                ],
                "withdrawn": {"at": _iso(run.withdrawn_at), "reason": run.withdrawn_reason}
                if run.withdrawn_at
                else None,
                "statusChanges": [
                    {"action": c.action, "reason": c.reason, "at": _iso(c.at)} for c in run.status_changes.all()
                ],
            }
        )


def definition_lines() -> Iterator[str]:
    cases = Prefetch("cases", queryset=WorkloadCase.objects.order_by("index"))
    references = Prefetch("references", queryset=ReferenceRow.objects.order_by("hardware", "kind"))
    definitions = Definition.objects.order_by("source", "name").prefetch_related(cases, references)
    for d in definitions.iterator(chunk_size=CHUNK):
        yield canonical_text(
            {
                "source": d.source,
                "name": d.name,
                "externalId": d.external_id,
                "title": d.title,
                "description": d.description,
                "subset": d.subset,
                "hfId": d.hf_id,
                "axes": d.axes,
                "inputs": d.inputs,
                "outputs": d.outputs,
                "workloadDigest": d.workload_digest,
                "cases": [
                    {"index": c.index, "uuid": c.uuid, "axes": c.axes, "inputs": c.inputs, "tolerance": c.tolerance}
                    for c in d.cases.all()
                ],
                "references": [
                    {"kind": r.kind, "hardware": r.hardware, "latencyNs": r.latency_ns, "perCaseNs": r.per_case_ns}
                    for r in d.references.all()
                ],
            }
        )


def board_lines() -> Iterator[str]:
    boards = SourceBoard.objects.order_by("source", "definition_external_id", "hardware", "stack_version")
    for b in boards.iterator(chunk_size=CHUNK):
        yield canonical_text(
            {
                "source": b.source,
                "definitionExternalId": b.definition_external_id,
                "hardware": b.hardware,
                "stackVersion": b.stack_version,
                "scores": b.scores,
                "topScore": b.top_score,
                "topUser": b.top_user,
            }
        )


def _iso(moment: datetime | None) -> str:
    assert moment is not None
    return moment.isoformat().replace("+00:00", "Z")


# -- the daily dump, listed and served ----------------------------------------------


def make_daily_dump(day: date, *, unless_younger_than: float | None = None) -> Path:
    """Today's dump in DUMPS_DIR, written aside and moved into place whole; only the newest DUMPS_KEPT stay.
    With `unless_younger_than`, a dump of the day written fewer seconds ago than that is kept as it is."""
    root = Path(settings.DUMPS_DIR)
    root.mkdir(parents=True, exist_ok=True)
    final = root / dump_name(day)
    if unless_younger_than is not None and final.exists() and time.time() - final.stat().st_mtime < unless_younger_than:
        return final
    partial = root / f".{dump_name(day)}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    write_dump(partial)
    if final.exists():
        shutil.rmtree(final)
    partial.rename(final)
    for old in list_dumps()[settings.DUMPS_KEPT :]:
        shutil.rmtree(root / old.name)
    return final


@dataclass(frozen=True)
class DumpListing:
    name: str
    files: list[dict[str, Any]]
    counts: dict[str, int]
    version: int


def list_dumps() -> list[DumpListing]:
    """The dumps in DUMPS_DIR, newest first, each with its files' checksums as its manifest gives them."""
    root = Path(settings.DUMPS_DIR)
    if not root.is_dir():
        return []
    listings = []
    for folder in sorted(root.iterdir(), reverse=True):
        if not DUMP_NAME.match(folder.name) or not (folder / dump_format.MANIFEST_FILE).is_file():
            continue
        try:
            manifest = dump_format.DumpManifest.model_validate_json((folder / dump_format.MANIFEST_FILE).read_bytes())
        except ValueError:  # not a dump this release can read: leave it out rather than fail the page
            continue
        files = [{"name": name, **entry.model_dump()} for name, entry in sorted(manifest.files.items())]
        listings.append(DumpListing(folder.name, files, manifest.counts, manifest.version))
    return listings


def dump_file_or_404(name: str, file: str) -> Path:
    """A file of a listed dump; any other name (a traversal, a hidden or partial dump) is a 404."""
    if not DUMP_NAME.match(name) or not FILE_NAME.match(file):
        raise Http404("No such dump file")
    path = Path(settings.DUMPS_DIR) / name / file
    if not path.is_file():
        raise Http404("No such dump file")
    return path


# -- importing a dump's history ----------------------------------------------------


class RunStateWriter:
    """Applies a dump's history lines (records.sources.base.RunStateItem) to the runs an import just created,
    then its sections' lines (SectionItem, runs/dump_sections.py).

    A run this import created takes the dump's publication time, every version's
    import time, its withdrawal and its withdrawals and restores, so its pages
    read as they did where the dump was made. A run the database held before
    keeps its own: a dump never rewrites a site's history. Lines are applied a
    batch at a time, a few queries a batch.
    """

    def __init__(self, since: datetime, import_log_id: int | None) -> None:
        self.since = since
        self.import_log_id = import_log_id
        self.pending: list[RunStateItem] = []
        self.sections = SectionImport(import_log_id)

    def add(self, item: RunStateItem | SectionItem | DumpChecks) -> None:
        if isinstance(item, DumpChecks):
            self.sections.checks = item  # before the sections it speaks of
            return
        if isinstance(item, SectionItem):
            self._flush_history()  # a section's lines name runs whose history is then in place
            self.sections.add(item)
            return
        self.pending.append(item)
        if len(self.pending) >= CHUNK:
            self._flush_history()

    def flush(self) -> None:
        self._flush_history()
        self.sections.finish()

    def _flush_history(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        wanted = {(item.source, item.external_id): item for item in batch}
        created = Run.objects.filter(
            run_id__in=[run_id_for(s, e) for s, e in wanted], published_at__gte=self.since
        ).values_list("pk", "source", "external_id")
        runs = {
            pk: wanted[(source, external_id)] for pk, source, external_id in created if (source, external_id) in wanted
        }
        if not runs:
            return
        Run.objects.bulk_update(
            [
                Run(
                    pk=pk, published_at=i.published_at, withdrawn_at=i.withdrawn_at, withdrawn_reason=i.withdrawn_reason
                )
                for pk, i in runs.items()
            ],
            ["published_at", "withdrawn_at", "withdrawn_reason"],
        )
        self._versions(runs)
        RunStatusChange.objects.bulk_create(
            RunStatusChange(run_id=pk, action=c.action, reason=c.reason, at=c.at)
            for pk, item in runs.items()
            for c in item.status_changes
        )

    def _versions(self, runs: dict[int, RunStateItem]) -> None:
        """Every version the dump lists, at the time it was first imported; older ones are added."""
        stored = set(RunVersion.objects.filter(run_id__in=list(runs)).values_list("run_id", "digest"))
        RunVersion.objects.bulk_create(
            RunVersion(
                run_id=pk, digest=v.digest, declared_digests=v.declared_digests, import_log_id=self.import_log_id
            )
            for pk, item in runs.items()
            for v in item.versions
            if (pk, v.digest) not in stored
        )
        times = {(pk, v.digest): v.imported_at for pk, item in runs.items() for v in item.versions}
        versions = RunVersion.objects.filter(run_id__in=list(runs)).only("pk", "run_id", "digest")
        changed = []
        for version in versions:
            if (version.run_id, version.digest) in times:
                version.imported_at = times[(version.run_id, version.digest)]
                changed.append(version)
        RunVersion.objects.bulk_update(changed, ["imported_at"], batch_size=CHUNK)
        refresh_version_counts(runs)
