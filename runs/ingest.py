"""Importing: source items in, index rows out; one unit per transaction.

A unit (a file or a problem folder) is imported whole or not at all: the first
bad record raises a RecordError and the transaction rolls back. Importing the
same unit twice changes nothing. A source record whose content changed keeps
its run (and permalink) and gains a new version beside the old one.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from queue import Full, Queue
from typing import Any

from django.db import connection, transaction
from django.db.models import Q
from django.dispatch import Signal
from django.utils import timezone

from records.canonical import digest
from records.errors import RecordError
from records.identity import NATIVE_SOURCE, run_id_for
from records.manifest import manifest_item
from records.reading import ReadItem, read_in_process, summarized
from records.rerun import may_be_rerun_result
from records.sources import ImportUnit
from records.sources.base import (
    BoardItem,
    DefinitionItem,
    DocumentItem,
    DumpChecks,
    Progress,
    RunStateItem,
    SectionItem,
    SkippedItem,
)
from records.summary import DefinitionRef, GroupRef, RunSummary, summarize
from runs.bulk import BulkInserter
from runs.dumps import RunStateWriter
from runs.figures import refresh_group_figures, refresh_version_counts
from runs.floors import decide_floors
from runs.models import (
    ComparisonGroup,
    Definition,
    Document,
    ImportLog,
    ReferenceRow,
    Run,
    RunVersion,
    SourceBoard,
    WorkloadCase,
)
from web.scopes import IMPORT

BATCH_SIZE = 2000
# From this size a file is read in a process of its own: starting one costs a fraction of a second,
# which a smaller file would not win back. import_runs shows a progress bar from the same size.
READER_PROCESS_MIN_BYTES = 4 * 1024 * 1024
# Imports of at least this many new runs vacuum the run table and refresh the planner's statistics
# (refresh_planner_statistics) when they add a tenth of the table, or always from the second figure on.
ANALYZE_AFTER_RUNS = 10_000
ANALYZE_ALWAYS_AFTER_RUNS = 100_000
# Shared documents (protocols, environments, workloads) recur on every line;
# remember that many digests as already stored, then start over.
WRITTEN_DIGESTS_LIMIT = 50_000
RUN_INDEX_FIELDS = [
    "digest",
    "protocol_digest",
    "environment_digest",
    "workload_digest",
    "implementation_digest",
    "declared_digests",
    "definition_id",
    "group_id",
    "title",
    "implementation_name",
    "project",
    "author",
    "hardware",
    "status",
    "primary_statistic",
    "latency_ns",
    "reported_latency_ns",
    "source_score",
    "source_rank",
    "on_public_board",
    "observed_at",
]
DOCUMENTS = BulkInserter(Document, ["digest", "kind", "name", "canonical"], ignore_conflicts=True)
RUNS = BulkInserter(Run, ["run_id", "source", "external_id", *RUN_INDEX_FIELDS])
VERSIONS = BulkInserter(RunVersion, ["run_id", "digest", "declared_digests", "import_log_id", "source_line"])
# Sent inside an import's transaction with `run_pks`, the stored runs it gave a new version (never new runs): the
# evidence a rerun gave an earlier version does not cover the new one's figures (verification.reruns listens).
versions_added = Signal()


@dataclass
class ImportResult:
    path: str
    source: str
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    definitions: int = 0
    boards: int = 0
    documents: int = 0
    skipped: list[str] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return self.created + self.updated + self.unchanged

    def add(self, other: ImportResult) -> None:
        self.created += other.created
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.definitions += other.definitions
        self.boards += other.boards
        self.documents += other.documents


def import_unit(unit: ImportUnit, progress: Progress = None, *, in_process: bool | None = None) -> ImportResult:
    """Import one unit in one transaction; a RecordError leaves the database as it was.

    A large file is read in a process of its own (`in_process` insists either way);
    every write happens here, in this transaction.
    """
    if in_process is None:
        in_process = unit.path.is_file() and unit.path.stat().st_size >= READER_PROCESS_MIN_BYTES
    with transaction.atomic(), foreign_keys_checked_as_written():
        log = ImportLog.objects.create(path=str(unit.path), source=unit.source)
        importer = UnitImporter(unit.path, unit.source, log)
        if in_process:
            reading = read_in_process(unit, progress)
        else:
            reading = read_ahead(summarized(unit.adapter.read(unit.path, progress)))
        with reading as items:
            importer.add_all(items)
        importer.finish()
        IMPORT.retire_on_commit()
    refresh_planner_statistics(importer.result.created)
    return importer.result


def refresh_planner_statistics(created: int) -> None:
    """After an import that grew the run table by a tenth or more, have PostgreSQL vacuum and sample it now.

    Autovacuum would, a while later; until then the planner reads a table of a
    million runs as the one it last sampled (or as empty), and picks plans that
    sort a whole definition's runs for a page of fifty (0.7 s instead of 1 ms).
    VACUUM as well, where it can run (not inside a transaction): it marks the new
    rows' pages all-visible, so the counts that read an index alone (a run's
    rank) need not visit the table, and autovacuum, which starts on a table that
    many rows were inserted into, does not then take a core from the site for
    minutes after the import has returned (at 10^6 runs, right after an import,
    pages measured 20-60 % slower while it ran).
    """
    if connection.vendor != "postgresql" or created < ANALYZE_AFTER_RUNS:
        return
    stored = Run.objects.count() if created < ANALYZE_ALWAYS_AFTER_RUNS else 0
    if created * 10 >= stored:
        command = "ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)"
        with connection.cursor() as cursor:
            cursor.execute(f"{command} {Run._meta.db_table}")


@contextmanager
def foreign_keys_checked_as_written() -> Iterator[None]:
    """Check foreign keys as each statement ends, not all at commit.

    Django makes PostgreSQL's foreign keys deferred. Deferred, the four checks
    per run of a large import all waited for its commit: seconds at the end with
    nothing else to do, and a queue of pending checks that grew with the file.
    Checked as each batch is written, they overlap the reading of the next one.
    Every row an import writes refers to rows already written. Afterwards the
    keys are deferred again, for whatever a surrounding transaction still does;
    a rollback restores that by itself.
    """
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    yield
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")


@contextmanager
def read_ahead(items: Iterator[ReadItem], chunk: int = 500, chunks: int = 4) -> Iterator[Iterator[ReadItem]]:
    """The adapter's items, read on a thread of their own a few chunks ahead.

    Reading (parsing, validating, canonicalising) is pure Python; writing waits
    on the database most of its time, and while it waits the reader runs. At
    most `chunks` chunks wait in between, so memory stays bounded. An error the
    adapter raises surfaces here in its turn, after the items before it.
    """
    handoff: Queue[list[ReadItem] | BaseException | None] = Queue(maxsize=chunks)
    stopping = threading.Event()

    def hand_over(value: list[ReadItem] | BaseException | None) -> bool:
        while not stopping.is_set():
            try:
                handoff.put(value, timeout=0.1)
                return True
            except Full:
                continue
        return False

    def read() -> None:
        ready: list[ReadItem] = []
        try:
            for item in items:
                ready.append(item)
                if len(ready) >= chunk:
                    if not hand_over(ready):
                        return  # the writer has stopped
                    ready = []
            if hand_over(ready):
                hand_over(None)
        except BaseException as error:  # handed to the writer, which raises it after the items before it
            if hand_over(ready):
                hand_over(error)

    def received() -> Iterator[ReadItem]:
        while True:
            value = handoff.get()
            if value is None:
                return
            if isinstance(value, BaseException):
                raise value
            yield from value

    reader = threading.Thread(target=read, name="import-reader", daemon=True)
    reader.start()
    try:
        yield received()
    finally:
        stopping.set()
        reader.join()
        if isinstance(items, Generator):
            items.close()


def import_manifest(manifest: dict[str, Any], origin: str) -> Run:
    """Import a rerun's result, made here from a verified attestation, inside the caller's transaction.

    The run is new or nothing is written: a result's id is its request's, and a run already holding it
    (whoever wrote it) would make the request's evidence someone else's.
    """
    run = summarize(manifest_item(manifest, Path(origin), None, redigest=False, rerun_result=True))
    with transaction.atomic(), foreign_keys_checked_as_written():
        log = ImportLog.objects.create(path=origin, source=NATIVE_SOURCE)
        importer = UnitImporter(Path(origin), NATIVE_SOURCE, log)
        importer.add_all([run])
        importer.finish()
        if importer.result.created != 1:
            raise RecordError(origin, None, run.id_field, f"run {run.run_id} ({run.external_id}) exists already")
    return Run.objects.get(run_id=run.run_id)


def record_failure(unit: ImportUnit | None, error: RecordError, source: str = "") -> None:
    """Keep a trace of a failed import; its rows were rolled back. Without a unit, the file could not even be
    told apart (its source unknown)."""
    path, source = (str(unit.path), unit.source) if unit else (error.path, source)
    ImportLog.objects.create(path=path, source=source, finished_at=timezone.now(), error=str(error))


class UnitImporter:
    def __init__(self, path: Path, source: str, log: ImportLog) -> None:
        self.path = path
        self.log = log
        self.result = ImportResult(str(path), source)
        self.pending: list[RunSummary] = []
        self.touched_definitions: set[int] = set()
        # Groups whose runs were added or changed, or that a changed run left: their figures are recounted.
        self.touched_groups: set[int] = set()
        # Definitions whose content this unit wrote: their runs' physics floors are decided again (runs.floors).
        self.floor_definitions: set[int] = set()
        self.definition_ids: dict[tuple[str, str], int] = {}
        self.group_ids: dict[str, int] = {}
        self.written_digests: set[str] = set()
        # A dump's history of its runs and its sections (runs/dumps.py), applied once the runs they name are written.
        self.run_states = RunStateWriter(log.started_at, log.pk)

    def add_all(self, items: Iterable[ReadItem]) -> None:
        for item in items:
            if isinstance(item, RunSummary):
                self.pending.append(item)
                if len(self.pending) >= BATCH_SIZE:
                    self.flush()
            elif isinstance(item, DefinitionItem):
                self.write_definition(item)
            elif isinstance(item, BoardItem):
                self.write_board(item)
            elif isinstance(item, DocumentItem):
                self.write_document(item)
            elif isinstance(item, (RunStateItem, SectionItem, DumpChecks)):
                self.flush()
                self.run_states.add(item)
            elif isinstance(item, SkippedItem):
                where = f"line {item.line}: " if item.line else ""
                self.result.skipped.append(where + item.reason)

    def finish(self) -> None:
        self.flush()
        self.run_states.flush()
        self.result.skipped.extend(self.run_states.sections.skipped)
        if self.floor_definitions:
            self.touched_groups |= decide_floors(Run.objects.filter(definition_id__in=self.floor_definitions))
        refresh_source_ranks(self.touched_definitions)
        refresh_group_figures(self.touched_groups)
        self.log.finished_at = timezone.now()
        self.log.created = self.result.created
        self.log.updated = self.result.updated
        self.log.unchanged = self.result.unchanged
        self.log.skipped = len(self.result.skipped)
        self.log.save()

    # -- runs ----------------------------------------------------------------

    def flush(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        unique = self._unique_in_batch(batch)
        existing = self._existing_runs(unique)
        new: list[RunSummary] = []
        changed: list[tuple[RunSummary, int]] = []
        for key, run in unique.items():
            found = existing.get(key)
            if found is None:
                new.append(run)
            elif found[1] == run.digest:
                self.result.unchanged += 1
            else:
                changed.append((run, found[0]))
        changed = self._drop_known_versions(changed)
        for run, _ in changed:
            if may_be_rerun_result(run.source, run.external_id):
                # A rerun's result is its worker's attested measurement: whoever writes, it stays as it was made.
                raise RecordError(
                    self.path, run.line, run.id_field, f"run {run.run_id} is a rerun's result: it never changes"
                )
        self._resolve_definitions(new + [run for run, _ in changed])
        self._write_documents(new + [run for run, _ in changed])
        created = self._create_runs(new)
        self._update_runs(changed)
        # Whether any reported time is below its physics floor, decided from the rows just written.
        decide_floors(Run.objects.filter(pk__in=[*created, *(run_pk for _, run_pk in changed)]))

    def _unique_in_batch(self, batch: list[RunSummary]) -> dict[tuple[str, str], RunSummary]:
        unique: dict[tuple[str, str], RunSummary] = {}
        by_run_id: dict[str, RunSummary] = {}
        for run in batch:
            key = (run.source, run.external_id)
            earlier = unique.get(key)
            if earlier is None:
                if (holder := by_run_id.setdefault(run.run_id, run)) is not run:
                    raise self._collision_error(run, holder.source, holder.external_id)
                unique[key] = run
            elif earlier.digest != run.digest:
                raise self._duplicate_error(run, earlier.line)
        return unique

    def _duplicate_error(self, run: RunSummary, earlier_line: int | None) -> RecordError:
        where = f"line {earlier_line}" if earlier_line else "earlier in this file"
        return RecordError(
            self.path,
            run.line,
            run.id_field,
            f"{run.source} record {run.external_id!r} is also on {where} with different content",
        )

    def _collision_error(self, run: RunSummary, source: str, external_id: str) -> RecordError:
        # Permalink ids are 48 bits of a hash: among a million runs two may meet (odds about 1 in 500).
        return RecordError(
            self.path,
            run.line,
            run.id_field,
            f"{run.source} record {run.external_id!r} would get the permalink id {run.run_id}, which {source} "
            f"record {external_id!r} already has (two ids whose hashes collide); nothing of this file was imported",
        )

    def _existing_runs(self, unique: dict[tuple[str, str], RunSummary]) -> dict[tuple[str, str], tuple[int, str]]:
        """(source, external id) -> (pk, current digest) of the runs already stored."""
        stored = _stored_runs([run.run_id for run in unique.values()])
        existing = {(source, external_id): (pk, current) for source, external_id, pk, current in stored}
        if any(key not in unique for key in existing):
            self._raise_collision(unique, existing)
        return existing

    def _raise_collision(
        self, unique: dict[tuple[str, str], RunSummary], existing: dict[tuple[str, str], tuple[int, str]]
    ) -> None:
        """A stored run holds the permalink id of a different record of this batch."""
        by_run_id = {run.run_id: run for run in unique.values()}
        for source, external_id in existing:
            if (source, external_id) not in unique:
                raise self._collision_error(by_run_id[run_id_for(source, external_id)], source, external_id)

    def _drop_known_versions(self, changed: list[tuple[RunSummary, int]]) -> list[tuple[RunSummary, int]]:
        """A second version in one file is an error; an older version imported again stays old."""
        if not changed:
            return changed
        # Every version of these runs, a few each: asked only by run, the query cannot drift onto
        # reading all the versions this import has written so far.
        versions = RunVersion.objects.filter(run__in=[run_pk for _, run_pk in changed]).values_list(
            "run_id", "digest", "import_log_id", "source_line"
        )
        known: set[tuple[int, str]] = set()
        from_this_file: dict[int, int | None] = {}
        for run_pk, version_digest, import_log_id, source_line in versions:
            known.add((run_pk, version_digest))
            if import_log_id == self.log.pk:
                from_this_file[run_pk] = source_line
        kept = []
        for run, run_pk in changed:
            if run_pk in from_this_file:
                raise self._duplicate_error(run, from_this_file[run_pk])
            if (run_pk, run.digest) in known:
                self.result.unchanged += 1
            else:
                kept.append((run, run_pk))
        return kept

    def _write_documents(self, runs: Iterable[RunSummary]) -> None:
        rows: dict[str, tuple[str, str, str, str]] = {}
        written = self.written_digests
        for run in runs:
            for row in run.documents:
                if row[0] not in written and row[0] not in rows:
                    rows[row[0]] = row
        DOCUMENTS.insert(list(rows.values()))
        if len(written) > WRITTEN_DIGESTS_LIMIT:
            written.clear()
        written.update(rows)

    def _create_runs(self, new: list[RunSummary]) -> list[int]:
        """Insert the new runs; returns their primary keys."""
        if not new:
            return []
        rows = [(run.run_id, run.source, run.external_id, *self._index_values(run)) for run in new]
        pks = RUNS.insert(rows, returning_ids=True)
        self._add_versions(zip(pks, new, strict=True))
        self.result.created += len(rows)
        return list(pks)

    def _update_runs(self, changed: list[tuple[RunSummary, int]]) -> None:
        if not changed:
            return
        runs = Run.objects.in_bulk([run_pk for _, run_pk in changed])
        now = timezone.now()
        for indexed, run_pk in changed:
            run = runs[run_pk]
            if run.definition_id:
                self.touched_definitions.add(run.definition_id)
            self.touched_groups.add(run.group_id)
            for name, value in zip(RUN_INDEX_FIELDS, self._index_values(indexed), strict=True):
                setattr(run, name, value)
            run.updated_at = now
        Run.objects.bulk_update(runs.values(), [*RUN_INDEX_FIELDS, "updated_at"], batch_size=BATCH_SIZE)
        self._add_versions((run_pk, indexed) for indexed, run_pk in changed)
        refresh_version_counts(runs)  # a new run's one version is the field's default
        self.result.updated += len(changed)
        versions_added.send(sender=UnitImporter, run_pks=list(runs))

    def _index_values(self, run: RunSummary) -> tuple[Any, ...]:
        """The index fields of a run's current version (RUN_INDEX_FIELDS)."""
        definition_id = self.definition_ids[_definition_key(run.definition)] if run.definition else None
        if definition_id:
            self.touched_definitions.add(definition_id)
        self.touched_groups.add(self.group_ids[run.group.key])
        return (
            run.digest,
            run.protocol_digest,
            run.environment_digest,
            run.workload_digest,
            run.implementation_digest,
            run.declared_digests,
            definition_id,
            self.group_ids[run.group.key],
            run.title[:500],
            run.implementation_name[:255],
            run.project[:255],
            run.author[:255],
            run.group.hardware,
            run.status,
            run.primary_statistic,
            run.latency_ns,
            None,  # a version's reported latency is its own until a rerun decides it (verification.reruns)
            run.source_score,
            None,  # the source rank is set once the whole file is in
            run.on_public_board,
            run.observed_at,
        )

    def _add_versions(self, pairs: Iterable[tuple[int, RunSummary]]) -> None:
        VERSIONS.insert([(run_pk, run.digest, run.declared_digests, self.log.pk, run.line) for run_pk, run in pairs])

    def _resolve_definitions(self, runs: list[RunSummary]) -> None:
        """Find or create the definitions and comparison groups of a batch, a few queries for all of them."""
        definitions = {
            _definition_key(run.definition): run.definition
            for run in runs
            if run.definition is not None and _definition_key(run.definition) not in self.definition_ids
        }
        if definitions:
            self._fetch_definitions(definitions)
            Definition.objects.bulk_create(
                [
                    Definition(source=ref.source, name=ref.name, external_id=ref.external_id, title=ref.title[:255])
                    for key, ref in definitions.items()
                    if key not in self.definition_ids
                ],
                ignore_conflicts=True,
            )
            self._fetch_definitions(definitions)
        groups: dict[str, ComparisonGroup] = {}
        for run in runs:
            if run.group.key not in self.group_ids and run.group.key not in groups:
                definition_id = self.definition_ids[_definition_key(run.definition)] if run.definition else None
                groups[run.group.key] = _new_group(run.group, definition_id)
        if groups:
            ComparisonGroup.objects.bulk_create(groups.values(), ignore_conflicts=True)
            self.group_ids.update(ComparisonGroup.objects.filter(key__in=list(groups)).values_list("key", "pk"))

    def _fetch_definitions(self, wanted: dict[tuple[str, str], DefinitionRef]) -> None:
        query = Q()
        for source, name in wanted:
            query |= Q(source=source, name=name)
        for pk, source, name, external_id in Definition.objects.filter(query).values_list(
            "pk", "source", "name", "external_id"
        ):
            ref = wanted[(source, name)]
            if ref.external_id and not external_id:
                Definition.objects.filter(pk=pk).update(external_id=ref.external_id)
            self.definition_ids[(source, name)] = pk

    # -- definitions and boards ------------------------------------------------

    def write_definition(self, item: DefinitionItem) -> None:
        content_digest = digest(item.model_dump())
        definition, _ = Definition.objects.get_or_create(
            source=item.source, name=item.name, defaults={"title": item.title[:255]}
        )
        self.touched_definitions.add(definition.pk)
        if definition.content_digest == content_digest:
            return
        for name in (
            "external_id",
            "title",
            "description",
            "subset",
            "hf_id",
            "axes",
            "inputs",
            "outputs",
            "workload_digest",
        ):
            setattr(definition, name, getattr(item, name))
        definition.case_count = len(item.cases)
        definition.content_digest = content_digest
        definition.save()
        self.floor_definitions.add(definition.pk)
        definition.cases.all().delete()
        WorkloadCase.objects.bulk_create(
            WorkloadCase(
                definition=definition,
                index=case.index,
                uuid=case.uuid,
                axes=case.axes,
                inputs=case.inputs,
                tolerance=case.tolerance,
            )
            for case in item.cases
        )
        definition.references.all().delete()
        ReferenceRow.objects.bulk_create(
            ReferenceRow(
                definition=definition,
                hardware=ref.hardware,
                kind=ref.kind,
                latency_ns=ref.latency_ns,
                per_case_ns=ref.per_case_ns,
            )
            for ref in item.references
        )
        self.result.definitions += 1

    def write_document(self, item: DocumentItem) -> None:
        """A standalone document; one already stored (same digest, same content) adds nothing."""
        sealed = item.sealed
        if sealed.digest in self.written_digests:
            return
        _, created = Document.objects.get_or_create(
            digest=sealed.digest, defaults={"kind": sealed.kind, "name": sealed.name, "canonical": sealed.text}
        )
        self.written_digests.add(sealed.digest)
        self.result.documents += created

    def write_board(self, item: BoardItem) -> None:
        board, created = SourceBoard.objects.get_or_create(
            source=item.source,
            definition_external_id=item.definition_external_id,
            hardware=item.hardware,
            stack_version=item.stack_version,
            defaults={"scores": item.scores, "top_score": item.top_score, "top_user": item.top_user},
        )
        snapshot = (item.scores, item.top_score, item.top_user)
        if not created:
            if (board.scores, board.top_score, board.top_user) == snapshot:
                return
            board.scores, board.top_score, board.top_user = snapshot
            board.save()
        self.touched_definitions.update(
            Definition.objects.filter(source=item.source, external_id=item.definition_external_id).values_list(
                "pk", flat=True
            )
        )
        self.result.boards += 1


def refresh_source_ranks(definition_ids: set[int]) -> None:
    """Each run's place on its source's own board, where the board lists its score.

    Groups without a board lose any rank in one statement. Elsewhere runs are
    read as plain values a chunk at a time and only changed ranks are written,
    so a group of a million runs costs no more memory than one chunk.
    """
    if not definition_ids:
        return
    groups = list(
        ComparisonGroup.objects.filter(definition_id__in=definition_ids)
        .exclude(native_order="")
        .select_related("definition")
    )
    boards = _boards_of(groups)
    unranked = [group.pk for group in groups if group.pk not in boards]
    Run.objects.filter(group_id__in=unranked).exclude(source_rank=None).update(source_rank=None)
    for group_pk, board in boards.items():
        changed: list[Run] = []
        rows = Run.objects.filter(group_id=group_pk).values_list(
            "pk", "source_score", "on_public_board", "withdrawn_at", "source_rank"
        )
        for pk, score, on_public_board, withdrawn_at, current in rows.iterator(chunk_size=BATCH_SIZE):
            rank = None
            if on_public_board and withdrawn_at is None and score is not None:
                rank = board.rank_of(score)
            if rank != current:
                changed.append(Run(pk=pk, source_rank=rank))
            if len(changed) >= BATCH_SIZE:
                Run.objects.bulk_update(changed, ["source_rank"])
                changed = []
        Run.objects.bulk_update(changed, ["source_rank"])


def _boards_of(groups: list[ComparisonGroup]) -> dict[int, SourceBoard]:
    """group pk -> the source's board for its definition, GPU and stack version, where there is one."""
    wanted: dict[tuple[str, str, str, str], list[int]] = {}
    for group in groups:
        assert group.definition is not None
        identity = (group.definition.source, group.definition.external_id, group.hardware, group.harness_version)
        wanted.setdefault(identity, []).append(group.pk)
    candidates = SourceBoard.objects.filter(
        source__in={source for source, *_ in wanted},
        definition_external_id__in={external_id for _, external_id, *_ in wanted},
    )
    boards: dict[int, SourceBoard] = {}
    for board in candidates:
        identity = (board.source, board.definition_external_id, board.hardware, board.stack_version)
        for group_pk in wanted.get(identity, []):
            boards[group_pk] = board
    return boards


def _stored_runs(run_ids: list[str]) -> list[tuple[str, str, int, str]]:
    """(source, external id, pk, digest) of the stored runs among these permalink ids.

    The lookup goes by run id, whose unique index the planner takes even on a
    table it has no statistics for yet, as in a first large import: asked by
    (source, external id) it chose to read every run of the source, per batch.
    """
    if connection.vendor != "postgresql":
        return list(Run.objects.filter(run_id__in=run_ids).values_list("source", "external_id", "pk", "digest"))
    # One parameter: binding a batch's thousands of ids one by one cost more than the lookup itself,
    # and even a list parameter is written out element by element in Python. Run ids are hex digits.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT source, external_id, id, digest FROM {Run._meta.db_table} "
            "WHERE run_id = ANY(string_to_array(%s, ','))",
            [",".join(run_ids)],
        )
        rows: list[tuple[str, str, int, str]] = cursor.fetchall()
    return rows


def _definition_key(ref: DefinitionRef) -> tuple[str, str]:
    return (ref.source, ref.name)


def _new_group(group: GroupRef, definition_id: int | None) -> ComparisonGroup:
    return ComparisonGroup(
        key=group.key,
        definition_id=definition_id,
        family=group.family,
        harness=group.harness,
        harness_version=group.harness_version,
        hardware=group.hardware,
        architecture=group.architecture,
        native_order=group.native_order,
    )
