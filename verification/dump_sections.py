"""verification's sections of a dump: its workers' keys, the finished reruns with their verdicts and
attestations, and the runs' evidence history. Registered with runs' registry (runs/dump_sections.py, which
says what a section is and what never goes in one) from VerificationConfig.ready."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db.models import Exists, OuterRef, Prefetch, Q

from records.attestation import AttestationError, PublishedKey, key_set, verified_statement
from records.canonical import canonical_text
from records.errors import RecordError
from records.rerun import Verdict, judged_by, measured_from_result
from records.sources import dump as dump_format
from records.sources.base import CountedRerun, SectionItem
from runs.dump_sections import (
    CHUNK,
    DumpSection,
    SectionBatch,
    SectionImport,
    iso,
    moment,
    reset_sequence,
    timestamp,
)
from runs.figures import refresh_group_figures
from runs.models import Run, RunVersion
from verification.figures import refresh_run_counters
from verification.models import EvidenceChange, RerunAttestation, RerunRequest, WorkerKey
from verification.reruns import judge, refresh_evidence
from verification.serializers import worker_key_json

logger = logging.getLogger(__name__)


# -- workers ---------------------------------------------------------------------------


def worker_lines() -> Iterator[str]:
    """This site's own rerun workers' public keys and their revocations, as /api/v1/workers publishes them, by
    key id; never a key another dump listed, which this site does not vouch for."""
    for key in WorkerKey.objects.registered_here().order_by("key_id").iterator(chunk_size=CHUNK):
        yield canonical_text(worker_key_json(key))


def apply_workers(batch: SectionBatch) -> None:
    """Keep the keys this site lacks as provenance, published by the dump: they verify nothing here (only this
    site's registry and keys pinned for the dump's publisher do, records.sources.dump.check_reruns), and the
    collector, /api/v1/workers and this site's dumps never take them. A key this site holds already, registered
    here above all, stays as it is, whatever name the dump gives it."""
    lines = batch.validated(dump_format.WorkerLine)
    known = set(WorkerKey.objects.filter(key_id__in=[line.keyId for _, line in lines]).values_list("key_id", flat=True))
    WorkerKey.objects.bulk_create(
        _published_key(line, batch.importing.checks.publisher, batch, item)
        for item, line in lines
        if line.keyId not in known
    )


def registered_worker_keys() -> dict[str, PublishedKey]:
    """This site's registry, with its revocations, by key id: the keys whose attestations an import counts
    beside those an operator pins (runs.dump_sections.trusted_keys). Never a key stored from a dump: a dump's
    own key list is provenance."""
    return key_set([worker_key_json(key) for key in WorkerKey.objects.registered_here()])


def _published_key(key: PublishedKey, publisher: str, batch: SectionBatch, item: SectionItem) -> WorkerKey:
    return WorkerKey(
        name=key.name,
        hardware=",".join(key.classes),
        public_key=key.publicKey,
        key_id=key.keyId,
        created_at=timestamp(batch, item, key.createdAt, "createdAt"),
        revoked_at=moment(batch, item, key.revokedAt, "revokedAt"),
        registered_here=False,
        published_by=publisher,
    )


WORKERS = DumpSection(
    file=dump_format.WORKERS_FILE,
    order=5,
    count="workers",
    readme="""each of this site's rerun workers' public key (ed25519,
                      base64), its key id (sha256 of the key), name,
                      hardware classes and the time it was registered and
                      revoked, by key id: what verifies the reruns'
                      attestations, offline too (python -m
                      records.attestation verify FILE --keys
                      workers.jsonl.gz). A dump cannot vouch for itself:
                      import_runs counts an attestation only against its
                      own site's keys and those its operator pins for this
                      dump's publisher (--trust-workers, with this file
                      or /api/v1/workers as fetched from the publisher)""",
    lines=worker_lines,
    apply=apply_workers,
    vouches=registered_worker_keys,
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
        "attestation__received_at",
        "attestation__worker_key__public_key",
    )
    for r in rows.iterator(chunk_size=CHUNK):
        envelope, recorded_at = r["attestation__envelope"], iso(r["attestation__received_at"])
        if envelope is not None and not _verifies(envelope, r["attestation__worker_key__public_key"], r["pk"]):
            # An envelope edited where it is stored is no one's word: dumped without it, so that no mirror counts
            # the rerun (an unattested line is left out on import), as this site's own pages no longer do.
            envelope = recorded_at = None
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
                "attestation": envelope,
                "attestationRecordedAt": recorded_at,
            }
        )


def _verifies(envelope: Any, public_key: str, number: int) -> bool:
    try:
        verified_statement(envelope, public_key)
    except (AttestationError, ValueError) as error:
        logger.error("rerun #%s dumped without its attestation, which no longer verifies: %s", number, error)
        return False
    return True


def apply_reruns(batch: SectionBatch) -> None:
    """The reruns of runs this import created, under their own numbers where this site has not used them: each
    whose attestation counts as its attestation and this site's rule decide it (_decided), and each with none
    that decided nothing as its line says; one the reader left out is not written, nor its result run."""
    lines = batch.validated(dump_format.RerunLine)
    importing = batch.importing
    runs = batch.created_runs({line.run for _, line in lines} | {line.resultRun for _, line in lines if line.resultRun})
    rows = Run.objects.in_bulk(list(runs.values()))
    taken = set(RerunRequest.objects.filter(pk__in=[line.number for _, line in lines]).values_list("pk", flat=True))
    # Inserting sets requested_at to now (auto_now_add): each line's own time is put back after.
    times: dict[int, datetime] = {}
    own_numbers: list[RerunRequest] = []
    renumbered: list[RerunRequest] = []
    written: list[tuple[int, RerunRequest]] = []
    for item, line in lines:
        if line.number in importing.reruns or line.number in times:
            raise batch.error(item, "number", f"rerun #{line.number} is on two lines")
        times[line.number] = timestamp(batch, item, line.requestedAt, "requestedAt")
        if line.run not in runs or line.number in importing.checks.left_out:
            continue  # a run this site held already keeps its own reruns; the reader said why it left one out
        counted = importing.checks.counted.get(line.number)
        request = RerunRequest(
            pk=None if line.number in taken else line.number,
            run_id=runs[line.run],
            result_run_id=_result_run(batch, item, line, runs) if counted else None,
            **_rerun_fields(batch, item, line),
            **_decided(batch, item, line, counted, rows[runs[line.run]]),
            **_judging_harness(counted),
        )
        (renumbered if request.pk is None else own_numbers).append(request)
        written.append((line.number, request))
    if own_numbers:
        RerunRequest.objects.bulk_create(own_numbers)
        reset_sequence(RerunRequest)  # before the others take numbers from the sequence
    RerunRequest.objects.bulk_create(renumbered)  # each gets its new number (its pk) back
    for number, request in written:
        request.requested_at = times[number]
        importing.reruns[number] = (request.pk, request.run_id)
    RerunRequest.objects.bulk_update([request for _, request in written], ["requested_at"])
    _keep_attestations(batch, dict(written), lines)
    refresh_run_counters({request.run_id for _, request in written})


def _decided(
    batch: SectionBatch, item: SectionItem, line: dump_format.RerunLine, counted: CountedRerun | None, run: Run
) -> dict[str, Any]:
    """A rerun's verdict: for one whose attestation counts, the evidence rule (verification.reruns.judge) on the figures
    its worker signed and the run version it reran; where the line's rule and tolerance are this site's, the line
    must say the same, or the dump is refused. A line decided under another rule or tolerance, or on a run that
    has gained a version since, is decided again under this site's rule rather than refused, as `manage.py
    reevaluate` would: what is stored is this site's own verdict either way. A rerun without figures (no
    attestation, or a harness that wrote no result, whose verdict the reader found empty) keeps its line's."""

    result = counted.attested.result if counted else None
    if result is None:
        return _verdict_fields(line.verdict, line.verdictReason, line.ruleVersion, line.tolerance)
    decided = judge(RerunRequest(run_digest=line.runDigest, hardware=line.hardware), run, measured_from_result(result))
    if (line.ruleVersion, line.tolerance, line.runDigest) != (decided.rule_version, decided.tolerance, run.digest):
        batch.importing.redecided.add(run.pk)
    else:
        _check_verdict(batch, item, line, decided)
    return _verdict_fields(decided.level, decided.reason, decided.rule_version, decided.tolerance)


def _check_verdict(batch: SectionBatch, item: SectionItem, line: dump_format.RerunLine, decided: Verdict) -> None:
    rule = f"rule {decided.rule_version}, tolerance {decided.tolerance}"
    for name, said, given in (
        ("verdict", line.verdict, decided.level),
        ("verdictReason", line.verdictReason, decided.reason),
    ):
        if said != given:
            message = f"rerun #{line.number} says {said!r}, but its attestation's figures give {given!r} ({rule})"
            raise batch.error(item, name, message)


def _verdict_fields(level: str, reason: str, rule_version: int | None, tolerance: float | None) -> dict[str, Any]:
    return {"verdict": level, "verdict_reason": reason, "rule_version": rule_version, "tolerance": tolerance}


def _keep_attestations(
    batch: SectionBatch, written: dict[int, RerunRequest], lines: list[tuple[SectionItem, dump_format.RerunLine]]
) -> None:
    """Each counted rerun's attestation, as the one its verdict stands on, with the key that verified it, and
    the job and worker it names."""
    checks = batch.importing.checks
    for item, line in lines:
        request, counted = written.get(line.number), checks.counted.get(line.number)
        if request is None or counted is None:
            continue
        attested = counted.attested
        if RerunAttestation.objects.filter(job_id=attested.job_id).exists():
            raise batch.error(item, "attestation", f"job {attested.job_id} is attested on another rerun already")
        key = _verifying_key(counted, checks.publisher, batch, item)
        request.attestation = RerunAttestation.objects.create(
            request=request,
            attempt=line.attempts,
            job_id=attested.job_id,
            worker_key=key,
            envelope=line.attestation,
            received_at=moment(batch, item, line.attestationRecordedAt, "attestationRecordedAt")
            or request.finished_at
            or request.requested_at,
            harness_seconds=attested.predicate.harnessSeconds,
        )
        request.job_id, request.worker_key = attested.job_id, key
        request.save(update_fields=["attestation", "job_id", "worker_key"])


def _verifying_key(counted: CountedRerun, publisher: str, batch: SectionBatch, item: SectionItem) -> WorkerKey:
    """The row of the key that verified an attestation: this site's own, or a key pinned for the dump's publisher,
    kept as published by the dump where its own list did not hold it."""
    key = WorkerKey.objects.filter(key_id=counted.key.keyId).first()
    if key is None:
        key = _published_key(counted.key, publisher, batch, item)
        key.save()
    return key


def _judging_harness(counted: CountedRerun | None) -> dict[str, str]:
    """The harness its worker signed that it ran (never a line's word): a rerun without an attestation that counts
    names none."""
    result = counted.attested.result if counted else None
    version, digest = judged_by(result.get("harness") if result else None)
    return {"harness_version": version, "harness_digest": digest}


def _result_run(
    batch: SectionBatch, item: SectionItem, line: dump_format.RerunLine, runs: dict[str, int]
) -> int | None:
    if line.resultRun is None:
        return None
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
    """What a rerun's line says beyond its verdict. Where its attestation counts, the reader found every field
    the attestation decides (state, failure, harness time, run, version, class, result run) as it says."""
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
                      whose figures decided the verdict, and when the site
                      took it in""",
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
                        "version": change.version or None,
                        "ruleVersion": change.rule_version,
                        "tolerance": change.tolerance,
                    }
                    for change in run.evidence_changes.all()
                ],
            }
        )


def apply_evidence(batch: SectionBatch) -> None:
    """The level and evidence history of the runs this import created, each as the evidence rule gives it on
    the reruns that count; their groups' figures follow. A line that rests on a rerun left out is left out
    too, and the rule sets its run's level (settle_evidence)."""
    lines = batch.validated(dump_format.EvidenceLine)
    importing = batch.importing
    runs = batch.created_runs(line.run for _, line in lines)
    levels: dict[str, list[int]] = {}
    changes: list[tuple[EvidenceChange, datetime]] = []
    applied: dict[int, SectionItem] = {}
    for item, line in lines:
        if line.run not in runs:
            continue
        pk = runs[line.run]
        resting = [change.rerun for change in line.changes if change.rerun in importing.checks.left_out]
        if resting:
            importing.left_out_evidence.add(pk)
            said = f"run {line.run}'s evidence left out: it rests on rerun #{resting[0]}, which is left out"
            importing.skipped.append(f"{item.file} line {item.line}: {said}")
            continue
        _check_history(batch, item, line, pk)
        applied[pk] = item
        levels.setdefault(line.level, []).append(pk)
        for index, change in enumerate(line.changes):
            row = EvidenceChange(
                run_id=pk,
                previous=change.previous,
                evidence=change.to,
                rerun_id=importing.reruns[change.rerun][0] if change.rerun is not None else None,
                version=change.version or "",
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
    importing.evidence_lines.update(applied)
    _check_levels(batch, applied)
    touched = [pk for pks in levels.values() for pk in pks]
    refresh_run_counters(touched)
    # A run not reproduced is ranked after the others: its group's figures change with its level.
    refresh_group_figures(Run.objects.filter(pk__in=touched).values_list("group_id", flat=True))


def _check_history(batch: SectionBatch, item: SectionItem, line: dump_format.EvidenceLine, pk: int) -> None:
    """Each change names a rerun of this run whose attestation counts, or, back to "reported", a version of this run
    (a new one no rerun had checked); the changes follow one another from "reported" to the line's level."""
    importing = batch.importing
    level = Run.Evidence.REPORTED.value
    for index, change in enumerate(line.changes):
        if change.previous != level:
            raise batch.error(item, f"changes.{index}.from", f"{change.previous}, but the level was {level} then")
        level = change.to
        if change.rerun is None:
            _check_version_change(batch, item, change, index, pk)
            continue
        rerun = importing.reruns.get(change.rerun)
        if rerun is None or rerun[1] != pk:
            raise batch.error(item, f"changes.{index}.rerun", f"rerun #{change.rerun}, not a rerun of this run")
        counted = importing.checks.counted.get(change.rerun)
        if counted is None or counted.attested.result is None:
            said = f"rerun #{change.rerun}, which no attested figures decided: it moves no evidence"
            raise batch.error(item, f"changes.{index}.rerun", said)
    if line.level != level:
        raise batch.error(item, "level", f"{line.level}, but its last change leaves it {level}")


def _check_version_change(
    batch: SectionBatch, item: SectionItem, change: dump_format.EvidenceChangeLine, index: int, pk: int
) -> None:
    """A change no rerun made takes the run back to "reported", and names one of the run's versions."""
    if change.to != Run.Evidence.REPORTED:
        raise batch.error(item, f"changes.{index}.rerun", f"none, but only a rerun moves a run to {change.to}")
    if not change.version or not RunVersion.objects.filter(run_id=pk, digest=change.version).exists():
        said = f"{change.version}, not a version of this run" if change.version else "none, and no rerun either"
        raise batch.error(item, f"changes.{index}.version", said)


def _check_levels(batch: SectionBatch, applied: dict[int, SectionItem]) -> None:
    """Each line's level is the one the evidence rule gives on the reruns that count
    (verification.reruns.refresh_evidence, which records a change where it differs). Where one of the run's
    reruns was decided again under this site's rule, that change stands, as `manage.py reevaluate` would record
    it, and so does a run taken back to "reported" because no rerun of its current version stands (a dump before
    version 4 kept a rerun's level on the versions after the one it checked); elsewhere the line disagrees with its
    attestations, and the dump is refused."""
    for run in Run.objects.filter(pk__in=list(applied)):
        change = refresh_evidence(run)
        if change is not None and change.rerun_id is not None and run.pk not in batch.importing.redecided:
            said = f"{change.previous}, but the reruns whose attestations count give {change.evidence}"
            raise batch.error(applied[run.pk], "level", said)


def settle_evidence(importing: SectionImport) -> None:
    """Once every section is in: the evidence rule on each run this import gave reruns to that no applied line
    accounted for. A run whose line was left out, or a rerun of which was decided again under this site's
    rule, takes the rule's level; any other the rule would move had a line missing from the dump, which
    then disagrees with its attestations, and is refused."""

    pending = {run for _, run in importing.reruns.values()} - importing.evidence_lines
    for run in Run.objects.filter(pk__in=pending).order_by("pk"):
        change = refresh_evidence(run)
        if change is None or change.rerun_id is None or run.pk in importing.left_out_evidence | importing.redecided:
            continue
        path = Path(importing.checks.folder) / dump_format.EVIDENCE_FILE
        said = f"run {run.run_id} has no line, but the reruns whose attestations count give {change.evidence}"
        raise RecordError(path, None, "run", said)


EVIDENCE = DumpSection(
    file=dump_format.EVIDENCE_FILE,
    order=20,
    count="evidence",
    readme="""each run whose evidence level is not "reported", or has
                      ever changed, by run id: its level and every change
                      (time, from, to, the rerun number that made it, or
                      the run's version no rerun had checked that took it
                      back to "reported", the rule's version and
                      tolerance), oldest first""",
    lines=evidence_lines,
    apply=apply_evidence,
    finish=settle_evidence,
)

# Registered with runs' dumps from VerificationConfig.ready, in this order.
SECTIONS = (WORKERS, RERUNS, EVIDENCE)
