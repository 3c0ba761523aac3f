"""A dump's sections: the parts beyond the runs' own files, each owned by the app whose rows it holds.

runs/dumps.py writes the runs' own files (documents, manifests, history,
definitions, boards), then every registered section, and lists the sections in
manifest.json in the order an import applies them; `import_runs` reads them
back in that order, after the runs and their history, in the same transaction.

A section is one file of canonical JSON lines and two functions: `lines`
yields them, sorted by a stable key, each holding only what a public page
shows; `apply` writes a batch of them for the runs the import created (a run
the database held before keeps its own reruns, notes and reports), keeping
their dates. runs registers its own three below (workers, reruns, evidence). The
community's notes and the issue reports' statuses are attestations' rows:
runs never imports attestations (tests/web/test_package_layers.py), so
attestations registers its sections from its AppConfig.ready
(attestations/dump_sections.py). This registry is the whole contract between
them. A dump holding a section this site does not register is refused whole.

Never in a section: who asked, moderated or decided (those map to no one in a
mirror), contact details, network addresses, texts the pages do not show
(a report's body, a rerun's log), notes not approved, reruns still queued or
running (a mirror would send them to its own workers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from django.core.management.color import no_style
from django.db import connection
from django.db.models import Exists, OuterRef, Prefetch, Q
from pydantic import BaseModel

from records.attestation import stored_statement
from records.canonical import canonical_text
from records.errors import RecordError
from records.schema import parse_timestamp
from records.sources import dump as dump_format
from records.sources.base import SectionItem, validate_record
from runs.figures import refresh_group_figures, refresh_run_counters
from runs.models import EvidenceChange, RerunAttestation, RerunRequest, Run, RunVersion, WorkerKey
from runs.serializers import utc_text, worker_key_json

CHUNK = 1000
M = TypeVar("M", bound=BaseModel)


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
    # A dumped rerun's number -> (its row here, its run's row), for the evidence changes that name it.
    reruns: dict[int, tuple[int, int]] = field(default_factory=dict)
    result_runs: set[int] = field(default_factory=set)

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


# -- workers ---------------------------------------------------------------------------


def worker_lines() -> Iterator[str]:
    """Every rerun worker's public key and its revocation, as /api/v1/workers publishes them, by key id."""
    for key in WorkerKey.objects.order_by("key_id").iterator(chunk_size=CHUNK):
        yield canonical_text(worker_key_json(key))


def apply_workers(batch: SectionBatch) -> None:
    """Keep the keys this site lacks, to verify the dump's attestations by (records.sources.dump checked them
    all before a run was read). They are another site's workers': the collector never takes them."""
    lines = batch.validated(dump_format.WorkerLine)
    known = set(WorkerKey.objects.filter(key_id__in=[line.keyId for _, line in lines]).values_list("key_id", flat=True))
    WorkerKey.objects.bulk_create(
        WorkerKey(
            name=line.name,
            hardware=",".join(line.classes),
            public_key=line.publicKey,
            key_id=line.keyId,
            created_at=timestamp(batch, item, line.createdAt, "createdAt"),
            revoked_at=moment(batch, item, line.revokedAt, "revokedAt"),
            registered_here=False,
        )
        for item, line in lines
        if line.keyId not in known
    )


WORKERS = DumpSection(
    file=dump_format.WORKERS_FILE,
    order=5,
    count="workers",
    readme="""each rerun worker's public key (ed25519, base64), its key
                      id (sha256 of the key), name, hardware classes and
                      the time it was registered and revoked, by key id:
                      what verifies the reruns' attestations, offline too
                      (python -m records.attestation verify FILE --keys
                      workers.jsonl.gz)""",
    lines=worker_lines,
    apply=apply_workers,
)


# -- reruns ----------------------------------------------------------------------------


def rerun_lines() -> Iterator[str]:
    """Every finished rerun by number, with what its page and twin show and its worker's signed attestation;
    never who asked, the worker's process or the log."""
    finished = RerunRequest.objects.exclude(state__in=RerunRequest.ACTIVE_STATES).order_by("pk")
    rows = finished.values(
        "pk",
        "run__run_id",
        "run_digest",
        "hardware",
        "state",
        "reason",
        "requested_at",
        "started_at",
        "finished_at",
        "retry_at",
        "attempts",
        "harness_seconds",
        "failure_status",
        "failure_reason",
        "verdict",
        "verdict_reason",
        "rule_version",
        "tolerance",
        "result_run__run_id",
        "result_run__digest",
        "attestation__envelope",
    )
    for r in rows.iterator(chunk_size=CHUNK):
        yield canonical_text(
            {
                "number": r["pk"],
                "run": r["run__run_id"],
                "runDigest": r["run_digest"],
                "hardware": r["hardware"],
                "state": r["state"],
                "reason": r["reason"],
                "requestedAt": iso(r["requested_at"]),
                "startedAt": iso(r["started_at"]),
                "finishedAt": iso(r["finished_at"]),
                "retryAt": iso(r["retry_at"]),
                "attempts": r["attempts"],
                "harnessSeconds": r["harness_seconds"],
                "failureStatus": r["failure_status"],
                "failureReason": r["failure_reason"],
                "verdict": r["verdict"],
                "verdictReason": r["verdict_reason"],
                "ruleVersion": r["rule_version"],
                "tolerance": r["tolerance"],
                "resultRun": r["result_run__run_id"],
                "resultDigest": r["result_run__digest"],
                "attestation": r["attestation__envelope"],
            }
        )


def apply_reruns(batch: SectionBatch) -> None:
    """The reruns of runs this import created, under their own numbers where this site has not used them."""
    lines = batch.validated(dump_format.RerunLine)
    runs = batch.created_runs({line.run for _, line in lines} | {line.resultRun for _, line in lines if line.resultRun})
    taken = set(RerunRequest.objects.filter(pk__in=[line.number for _, line in lines]).values_list("pk", flat=True))
    # Inserting sets requested_at to now (auto_now_add): each line's own time is put back after.
    times: dict[int, datetime] = {}
    own_numbers: list[RerunRequest] = []
    renumbered: list[RerunRequest] = []
    written: list[tuple[int, RerunRequest]] = []
    for item, line in lines:
        if line.number in batch.importing.reruns or line.number in times:
            raise batch.error(item, "number", f"rerun #{line.number} is on two lines")
        times[line.number] = timestamp(batch, item, line.requestedAt, "requestedAt")
        if line.run not in runs:
            continue  # a run this site held already keeps its own reruns
        request = RerunRequest(
            pk=None if line.number in taken else line.number,
            run_id=runs[line.run],
            result_run_id=_result_run(batch, item, line, runs),
            **_rerun_fields(batch, item, line),
        )
        (renumbered if request.pk is None else own_numbers).append(request)
        written.append((line.number, request))
    if own_numbers:
        RerunRequest.objects.bulk_create(own_numbers)
        reset_sequence(RerunRequest)  # before the others take numbers from the sequence
    RerunRequest.objects.bulk_create(renumbered)  # each gets its new number (its pk) back
    for number, request in written:
        request.requested_at = times[number]
        batch.importing.reruns[number] = (request.pk, request.run_id)
    RerunRequest.objects.bulk_update([request for _, request in written], ["requested_at"])
    _keep_attestations(batch, dict(written), lines)
    refresh_run_counters({request.run_id for _, request in written})


def _keep_attestations(
    batch: SectionBatch, written: dict[int, RerunRequest], lines: list[tuple[SectionItem, dump_format.RerunLine]]
) -> None:
    """Each imported rerun's attestation (verified as the dump was read), as the one its verdict stands on."""
    for item, line in lines:
        request = written.get(line.number)
        if request is None or line.attestation is None:
            continue
        attested = stored_statement(line.attestation)
        key = WorkerKey.objects.filter(key_id=attested.keyid).first()
        if key is None:
            raise batch.error(item, "attestation", "signed by a key the dump's workers.jsonl.gz does not hold")
        if RerunAttestation.objects.filter(job_id=attested.job_id).exists():
            raise batch.error(item, "attestation", f"job {attested.job_id} is attested on another rerun already")
        request.attestation = RerunAttestation.objects.create(
            request=request,
            attempt=line.attempts,
            job_id=attested.job_id,
            worker_key=key,
            envelope=line.attestation,
            received_at=request.finished_at or request.requested_at,
            harness_seconds=attested.predicate.harnessSeconds,
        )
        request.save(update_fields=["attestation"])


def _result_run(
    batch: SectionBatch, item: SectionItem, line: dump_format.RerunLine, runs: dict[str, int]
) -> int | None:
    if line.resultRun is None or line.attestation is None:
        return None  # without an attestation the dump's result run was not imported (records.sources.dump)
    result = runs.get(line.resultRun)
    if result is None:
        if not Run.objects.filter(run_id=line.resultRun).exists():
            raise batch.error(item, "resultRun", f"run {line.resultRun}, which the dump does not hold")
        return None  # a run this site held already: it is not this rerun's result here
    if result in batch.importing.result_runs:
        raise batch.error(item, "resultRun", f"run {line.resultRun} is the result of two reruns")
    batch.importing.result_runs.add(result)
    return result


def _rerun_fields(batch: SectionBatch, item: SectionItem, line: dump_format.RerunLine) -> dict[str, Any]:
    return {
        "run_digest": line.runDigest,
        "hardware": line.hardware,
        "state": line.state,
        "reason": line.reason,
        "started_at": moment(batch, item, line.startedAt, "startedAt"),
        "finished_at": moment(batch, item, line.finishedAt, "finishedAt"),
        "retry_at": moment(batch, item, line.retryAt, "retryAt"),
        "attempts": line.attempts,
        "harness_seconds": line.harnessSeconds,
        "failure_status": line.failureStatus,
        "failure_reason": line.failureReason,
        "verdict": line.verdict,
        "verdict_reason": line.verdictReason,
        "rule_version": line.ruleVersion,
        "tolerance": line.tolerance,
    }


RERUNS = DumpSection(
    file=dump_format.RERUNS_FILE,
    order=10,
    count="reruns",
    readme="""each finished KernelIndex rerun, by its number (the #N its
                      run page shows): the run and the version it reran,
                      hardware class, state, verdict and its reason, the
                      evidence rule's version and tolerance, times, attempts,
                      failure, its result run (a run of source
                      "kernelindex" in runs.jsonl.gz) with its digest, and
                      the DSSE envelope its worker signed (an in-toto
                      statement, predicate https://kernelindex.dev/rerun/v1)
                      whose figures decided the verdict""",
    lines=rerun_lines,
    apply=apply_reruns,
)


# -- evidence --------------------------------------------------------------------------


def evidence_lines() -> Iterator[str]:
    """Each run whose evidence level is not "reported", or ever changed, by run id: its level and its changes."""
    changes = EvidenceChange.objects.exclude(rerun__state__in=RerunRequest.ACTIVE_STATES).order_by("changed_at", "id")
    changed = Exists(EvidenceChange.objects.filter(run_id=OuterRef("pk")))
    runs = (
        Run.objects.filter(~Q(evidence=Run.Evidence.REPORTED) | changed)
        .order_by("run_id")
        .only("pk", "run_id", "evidence")
        .prefetch_related(Prefetch("evidence_changes", queryset=changes))
    )
    for run in runs.iterator(chunk_size=CHUNK):
        yield canonical_text(
            {
                "run": run.run_id,
                "level": run.evidence,
                "changes": [
                    {
                        "at": iso(change.changed_at),
                        "from": change.previous,
                        "to": change.evidence,
                        "rerun": change.rerun_id,
                        "ruleVersion": change.rule_version,
                        "tolerance": change.tolerance,
                    }
                    for change in run.evidence_changes.all()
                ],
            }
        )


def apply_evidence(batch: SectionBatch) -> None:
    """The level and evidence history of the runs this import created; their groups' figures follow."""
    lines = batch.validated(dump_format.EvidenceLine)
    runs = batch.created_runs(line.run for _, line in lines)
    levels: dict[str, list[int]] = {}
    changes: list[tuple[EvidenceChange, datetime]] = []
    for item, line in lines:
        if line.run not in runs:
            continue
        pk = runs[line.run]
        levels.setdefault(line.level, []).append(pk)
        for index, change in enumerate(line.changes):
            rerun = batch.importing.reruns.get(change.rerun)
            if rerun is None or rerun[1] != pk:
                raise batch.error(item, f"changes.{index}.rerun", f"rerun #{change.rerun}, not a rerun of this run")
            row = EvidenceChange(
                run_id=pk,
                previous=change.previous,
                evidence=change.to,
                rerun_id=rerun[0],
                rule_version=change.ruleVersion,
                tolerance=change.tolerance,
            )
            changes.append((row, timestamp(batch, item, change.at, f"changes.{index}.at")))
    for level, pks in levels.items():
        Run.objects.filter(pk__in=pks).update(evidence=level)
    written = EvidenceChange.objects.bulk_create([row for row, _ in changes])
    for row, (_, at) in zip(written, changes, strict=True):
        row.changed_at = at
    EvidenceChange.objects.bulk_update(written, ["changed_at"])
    touched = [pk for pks in levels.values() for pk in pks]
    refresh_run_counters(touched)
    # A run not reproduced is ranked after the others: its group's figures change with its level.
    refresh_group_figures(Run.objects.filter(pk__in=touched).values_list("group_id", flat=True))


EVIDENCE = DumpSection(
    file=dump_format.EVIDENCE_FILE,
    order=20,
    count="evidence",
    readme="""each run whose evidence level is not "reported", or has
                      ever changed, by run id: its level and every change
                      (time, from, to, the rerun number that made it, the
                      rule's version and tolerance), oldest first""",
    lines=evidence_lines,
    apply=apply_evidence,
)

register_section(WORKERS)
register_section(RERUNS)
register_section(EVIDENCE)
