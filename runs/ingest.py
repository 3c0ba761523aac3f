"""Importing: source items in, index rows out; one unit per transaction.

A unit (a file or a problem folder) is imported whole or not at all: the first
bad record raises a RecordError and the transaction rolls back. Importing the
same unit twice changes nothing. A source record whose content changed keeps
its run (and permalink) and gains a new version beside the old one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from records.canonical import digest
from records.errors import RecordError
from records.identity import run_id_for
from records.manifest import RunItem
from records.sources import ImportUnit
from records.sources.base import BoardItem, DefinitionItem, Item, Progress, SkippedItem
from records.summary import DefinitionRef, RunSummary, summarize
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

BATCH_SIZE = 2000
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
    "definition",
    "group",
    "title",
    "implementation_name",
    "project",
    "hardware",
    "status",
    "primary_statistic",
    "latency_ns",
    "source_score",
    "source_rank",
    "on_public_board",
    "observed_at",
    "updated_at",
]


@dataclass
class ImportResult:
    path: str
    source: str
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    definitions: int = 0
    boards: int = 0
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


def import_unit(unit: ImportUnit, progress: Progress = None) -> ImportResult:
    """Import one unit in one transaction; a RecordError leaves the database as it was."""
    with transaction.atomic():
        log = ImportLog.objects.create(path=str(unit.path), source=unit.source)
        importer = UnitImporter(unit.path, unit.source, log)
        importer.add_all(unit.adapter.read(unit.path, progress))
        importer.finish()
    return importer.result


def record_failure(unit: ImportUnit, error: RecordError) -> None:
    """Keep a trace of a failed import; its rows were rolled back."""
    ImportLog.objects.create(path=str(unit.path), source=unit.source, finished_at=timezone.now(), error=str(error))


class UnitImporter:
    def __init__(self, path: Path, source: str, log: ImportLog) -> None:
        self.path = path
        self.log = log
        self.result = ImportResult(str(path), source)
        self.pending: list[RunItem] = []
        self.touched_definitions: set[int] = set()
        self.definition_ids: dict[tuple[str, str], int] = {}
        self.group_ids: dict[str, int] = {}
        self.written_digests: set[str] = set()

    def add_all(self, items: Iterable[Item]) -> None:
        for item in items:
            if isinstance(item, RunItem):
                self.pending.append(item)
                if len(self.pending) >= BATCH_SIZE:
                    self.flush()
            elif isinstance(item, DefinitionItem):
                self.write_definition(item)
            elif isinstance(item, BoardItem):
                self.write_board(item)
            elif isinstance(item, SkippedItem):
                where = f"line {item.line}: " if item.line else ""
                self.result.skipped.append(where + item.reason)

    def finish(self) -> None:
        self.flush()
        refresh_source_ranks(self.touched_definitions)
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
        summaries = self._unique_in_batch(batch)
        existing = self._existing_runs(summaries)
        new: list[tuple[RunItem, RunSummary]] = []
        changed: list[tuple[RunItem, RunSummary, Run]] = []
        for key, (item, summary) in summaries.items():
            run = existing.get(key)
            if run is None:
                new.append((item, summary))
            elif run.digest == item.run.digest:
                self.result.unchanged += 1
            else:
                changed.append((item, summary, run))
        changed = self._drop_known_versions(changed)
        self._write_documents([item for item, _ in new] + [item for item, _, _ in changed])
        self._create_runs(new)
        self._update_runs(changed)

    def _unique_in_batch(self, batch: list[RunItem]) -> dict[tuple[str, str], tuple[RunItem, RunSummary]]:
        unique: dict[tuple[str, str], tuple[RunItem, RunSummary]] = {}
        for item in batch:
            summary = summarize(item)
            key = (summary.source, summary.external_id)
            if key in unique:
                earlier = unique[key][0]
                if earlier.run.digest != item.run.digest:
                    raise self._duplicate_error(item, summary, earlier.line)
                continue
            unique[key] = (item, summary)
        return unique

    def _duplicate_error(self, item: RunItem, summary: RunSummary, earlier_line: int | None) -> RecordError:
        where = f"line {earlier_line}" if earlier_line else "earlier in this file"
        return RecordError(
            self.path,
            item.line,
            "externalId",
            f"{summary.source} record {summary.external_id!r} is also on {where} with different content",
        )

    def _existing_runs(
        self, summaries: dict[tuple[str, str], tuple[RunItem, RunSummary]]
    ) -> dict[tuple[str, str], Run]:
        by_source: dict[str, list[str]] = {}
        for source, external_id in summaries:
            by_source.setdefault(source, []).append(external_id)
        query = Q()
        for source, external_ids in by_source.items():
            query |= Q(source=source, external_id__in=external_ids)
        return {(run.source, run.external_id): run for run in Run.objects.filter(query)}

    def _drop_known_versions(
        self, changed: list[tuple[RunItem, RunSummary, Run]]
    ) -> list[tuple[RunItem, RunSummary, Run]]:
        """An older version imported again stays old; a second version in one file is an error."""
        if not changed:
            return changed
        run_ids = [run.pk for *_, run in changed]
        known = set(
            RunVersion.objects.filter(
                run_id__in=run_ids, digest__in=[item.run.digest for item, *_ in changed]
            ).values_list("run_id", "digest")
        )
        from_this_file = dict(
            RunVersion.objects.filter(run_id__in=run_ids, import_log=self.log).values_list("run_id", "source_line")
        )
        kept = []
        for item, summary, run in changed:
            if (run.pk, item.run.digest) in known:
                self.result.unchanged += 1
            elif run.pk in from_this_file:
                raise self._duplicate_error(item, summary, from_this_file[run.pk])
            else:
                kept.append((item, summary, run))
        return kept

    def _write_documents(self, items: Iterable[RunItem]) -> None:
        rows: dict[str, Document] = {}
        for item in items:
            for sealed in item.documents.values():
                if sealed.digest not in self.written_digests and sealed.digest not in rows:
                    rows[sealed.digest] = Document(
                        digest=sealed.digest, kind=sealed.kind, name=sealed.name, canonical=sealed.text
                    )
        Document.objects.bulk_create(rows.values(), ignore_conflicts=True, batch_size=BATCH_SIZE)
        if len(self.written_digests) > WRITTEN_DIGESTS_LIMIT:
            self.written_digests.clear()
        self.written_digests.update(rows)

    def _create_runs(self, new: list[tuple[RunItem, RunSummary]]) -> None:
        if not new:
            return
        runs = [
            Run(
                run_id=run_id_for(summary.source, summary.external_id),
                source=summary.source,
                external_id=summary.external_id,
            )
            for _, summary in new
        ]
        for run, (item, summary) in zip(runs, new, strict=True):
            self._apply(run, item, summary)
        Run.objects.bulk_create(runs, batch_size=BATCH_SIZE)
        self._add_versions(zip(runs, (item for item, _ in new), strict=True))
        self.result.created += len(runs)

    def _update_runs(self, changed: list[tuple[RunItem, RunSummary, Run]]) -> None:
        if not changed:
            return
        for item, summary, run in changed:
            self.touched_definitions.update([run.definition_id] if run.definition_id else [])
            self._apply(run, item, summary)
            run.updated_at = timezone.now()
        Run.objects.bulk_update([run for *_, run in changed], RUN_INDEX_FIELDS, batch_size=BATCH_SIZE)
        self._add_versions((run, item) for item, _, run in changed)
        self.result.updated += len(changed)

    def _apply(self, run: Run, item: RunItem, summary: RunSummary) -> None:
        """Copy the index fields of a run's current version onto its row."""
        documents = item.documents
        run.digest = item.run.digest
        run.protocol_digest = documents["protocol"].digest
        run.environment_digest = documents["environment"].digest
        spec = item.run.value["spec"]
        run.workload_digest = spec.get("workloadDigest") or ""
        run.implementation_digest = spec.get("implementationDigest") or ""
        run.declared_digests = item.declared_digests
        run.definition_id = self._definition_id(summary.definition)
        run.group_id = self._group_id(summary, run.definition_id)
        run.title = summary.title[:500]
        run.implementation_name = summary.implementation_name[:255]
        run.project = summary.project[:255]
        run.hardware = summary.group.hardware
        run.status = summary.status
        run.primary_statistic = summary.primary_statistic
        run.latency_ns = summary.latency_ns
        run.source_score = summary.source_score
        run.source_rank = None
        run.on_public_board = summary.on_public_board
        run.observed_at = summary.observed_at
        if run.definition_id:
            self.touched_definitions.add(run.definition_id)

    def _add_versions(self, pairs: Iterable[tuple[Run, RunItem]]) -> None:
        versions = [
            RunVersion(
                run=run,
                digest=item.run.digest,
                declared_digests=item.declared_digests,
                import_log=self.log,
                source_line=item.line,
            )
            for run, item in pairs
        ]
        RunVersion.objects.bulk_create(versions, batch_size=BATCH_SIZE)

    def _definition_id(self, ref: DefinitionRef | None) -> int | None:
        if ref is None:
            return None
        key = (ref.source, ref.name)
        if key not in self.definition_ids:
            definition, created = Definition.objects.get_or_create(
                source=ref.source,
                name=ref.name,
                defaults={"external_id": ref.external_id, "title": ref.title[:255]},
            )
            if not created and ref.external_id and not definition.external_id:
                Definition.objects.filter(pk=definition.pk).update(external_id=ref.external_id)
            self.definition_ids[key] = definition.pk
        return self.definition_ids[key]

    def _group_id(self, summary: RunSummary, definition_id: int | None) -> int:
        group = summary.group
        if group.key not in self.group_ids:
            row, _ = ComparisonGroup.objects.get_or_create(
                key=group.key,
                defaults={
                    "definition_id": definition_id,
                    "family": group.family,
                    "harness": group.harness,
                    "harness_version": group.harness_version,
                    "hardware": group.hardware,
                    "architecture": group.architecture,
                    "native_order": group.native_order,
                },
            )
            self.group_ids[group.key] = row.pk
        return self.group_ids[group.key]

    # -- definitions and boards ------------------------------------------------

    def write_definition(self, item: DefinitionItem) -> None:
        content_digest = digest(asdict(item))
        definition, _ = Definition.objects.get_or_create(
            source=item.source, name=item.name, defaults={"title": item.title[:255]}
        )
        self.touched_definitions.add(definition.pk)
        if definition.content_digest == content_digest:
            return
        for name in ("external_id", "title", "description", "subset", "hf_id", "axes", "inputs", "outputs"):
            setattr(definition, name, getattr(item, name))
        definition.case_count = len(item.cases)
        definition.content_digest = content_digest
        definition.save()
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
    """Each run's place on its source's own board, where the board lists its score."""
    if not definition_ids:
        return
    groups = (
        ComparisonGroup.objects.filter(definition_id__in=definition_ids)
        .exclude(native_order="")
        .select_related("definition")
    )
    for group in groups:
        assert group.definition is not None
        board = SourceBoard.objects.filter(
            source=group.definition.source,
            definition_external_id=group.definition.external_id,
            hardware=group.hardware,
            stack_version=group.harness_version,
        ).first()
        changed = []
        for run in group.runs.only("id", "source_score", "on_public_board", "withdrawn_at", "source_rank"):
            rank = None
            if board is not None and run.on_public_board and run.withdrawn_at is None and run.source_score is not None:
                rank = board.rank_of(run.source_score)
            if rank != run.source_rank:
                run.source_rank = rank
                changed.append(run)
        Run.objects.bulk_update(changed, ["source_rank"], batch_size=BATCH_SIZE)
