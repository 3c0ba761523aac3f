"""Controlled reruns: asked for by moderators, run by workers on KernelIndex's own hardware.

The `RerunRequest` row is the source of truth. Once stored it is sent to its
hardware class's queue as a job (records.worker_protocol.RerunJob: the run's
documents, the harness options and a fresh job id). A rerun worker
(harness/parent/worker.py) holds no database: it answers with signed messages, which
the collector (verification/collector.py) verifies before it calls the functions here.
A request is claimed for the worker that says it took its job, with a
conditional UPDATE, so a job delivered twice runs once for the site; its result
is recorded in one transaction, only while that claim still holds. The sweep
re-sends requests the broker lost and takes back those whose worker stopped
heartbeating, each under a new job id. Only a rerun's verdict moves a run's
evidence level.
"""

from __future__ import annotations

import logging
import secrets
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from celery import current_app
from django.conf import settings
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, PermissionsMixin
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.dispatch import Signal
from django.utils import timezone

from records.attestation import AttestationError, Attested
from records.canonical import digest
from records.hardware import UnknownHardwareClassError, hardware_class_named
from records.rerun import (
    RerunOf,
    Verdict,
    judged_by,
    measured_from_result,
    ranked_latency,
    reported_claim,
    rerun_manifest,
    verdict,
)
from records.sources import rerun_protocol_of
from records.summary import reported_latency
from records.worker_protocol import JOB_TASK, RerunJob, rerun_harness_options, sign_job
from runs.figures import RUN_COUNTERS, refresh_group_figures
from runs.ingest import import_manifest
from runs.models import EVIDENCE_LABELS, Document, Run
from runs.models import INCONCLUSIVE as INCONCLUSIVE_LEVEL
from runs.selectors import document_value, run_hardware_class
from verification import quorum
from verification.figures import refresh_run_counters
from verification.models import EvidenceChange, RerunAttestation, RerunRequest, RerunWorker, WorkerKey
from verification.selectors import live_hardware_classes
from verification.worker_keys import site_signing_key
from web.scopes import RERUN_PROGRESS, RERUN_RESULT, RERUN_VERDICT

logger = logging.getLogger(__name__)

SYSTEM_USERNAME = "kernelindex"

# Sent with `request` each time a rerun ends (a verdict, a failure, a cancellation, a lost worker) or its verdict
# is decided again (reevaluate), inside the transaction that wrote it where there is one: what waits on a rerun's
# verdict (a dispute: verification/disputes.py) follows it. Each passes through `_ended`; reruns know no listener.
rerun_ended = Signal()


def _ended(request: RerunRequest) -> None:
    rerun_ended.send(sender=RerunRequest, request=request)


class RerunRefusedError(Exception):
    """A rerun that cannot be asked for; the message says why, for the moderator."""


def may_request_rerun(user: PermissionsMixin | AnonymousUser) -> bool:
    """Asking for a rerun (or cancelling one) needs its own permission: being staff is not enough."""
    return user.has_perm("verification.request_rerun")


@dataclass(frozen=True)
class RunnableDocuments:
    """The Workload (definition, reference, cases) and the Implementation (the solution) a rerun hands the harness."""

    workload: dict[str, Any]
    implementation: dict[str, Any]


# -- asking ------------------------------------------------------------------------


def runnable_documents(run: Run) -> RunnableDocuments:
    """The run's definition (with its reference and cases) and solution, or RerunRefusedError saying what is missing."""
    return _runnable(run.workload_digest, run.implementation_digest)


def requested_documents(request: RerunRequest) -> RunnableDocuments:
    """The documents of the run's version that was asked for (a run may gain a version while its rerun waits)."""
    spec = (document_value(request.run_digest) or {}).get("spec") or {}
    return _runnable(str(spec.get("workloadDigest") or ""), str(spec.get("implementationDigest") or ""))


def _runnable(workload_digest: str, implementation_digest: str) -> RunnableDocuments:
    stored = Document.objects.in_bulk([d for d in (workload_digest, implementation_digest) if d])
    workload = stored.get(workload_digest)
    implementation = stored.get(implementation_digest)
    if implementation is None or not _solution_sources(implementation.value):
        raise RerunRefusedError("this run published no solution sources, so there is nothing to rerun")
    if workload is None or not _reference(workload.value):
        raise RerunRefusedError("this run's definition has no reference implementation to check a rerun against")
    return RunnableDocuments(workload.value, implementation.value)


def _solution_sources(implementation: dict[str, Any]) -> list[Any]:
    solution = implementation["spec"].get("solution") or {}
    sources = solution.get("sources") if isinstance(solution, dict) else None
    return sources if isinstance(sources, list) else []


def _reference(workload: dict[str, Any]) -> str:
    document = (workload["spec"].get("definition") or {}).get("document") or {}
    reference = document.get("reference") if isinstance(document, dict) else None
    return reference if isinstance(reference, str) else ""


def request_rerun(
    run: Run,
    *,
    user: AbstractBaseUser | AnonymousUser | None,
    hardware: str | None = None,
    reason: str = "",
    not_by: Sequence[str] | None = None,
) -> RerunRequest:
    """Store a request and send it once the transaction commits; refuse what cannot or need not run.

    `not_by`: the worker keys that must not run it; by default, while the run's quorum is short or disagrees,
    the keys that voted already (verification.quorum.keys_to_avoid), so that the rerun adds to the quorum."""
    if run.withdrawn_at is not None:
        raise RerunRefusedError("this run is withdrawn")
    runnable_documents(run)
    try:
        # A class no worker can ever serve would wait forever, and block every other rerun of the run.
        hardware = hardware_class_named(hardware or run_hardware_class(run)).name
    except UnknownHardwareClassError as unknown:
        raise RerunRefusedError(str(unknown)) from None
    try:
        with transaction.atomic():
            if RerunRequest.objects.active().filter(run=run).exists():
                raise RerunRefusedError("a rerun of this run is already queued or running")
            request = RerunRequest.objects.create(
                run=run,
                run_digest=run.digest,
                hardware=hardware,
                reason=reason.strip(),
                requested_by=user if isinstance(user, get_user_model()) else None,
                job_id=new_job_id(),
                harness_options=harness_options(run, hardware),
                not_by_keys=list(quorum.keys_to_avoid(run, hardware) if not_by is None else not_by),
            )
            log_rerun(
                request,
                f"Requested rerun #{request.pk} on {hardware}" + (f": {request.reason}" if reason else ""),
                user=request.requested_by,
            )
            refresh_run_counters([run.pk])
            run.refresh_from_db(fields=RUN_COUNTERS)
            RERUN_PROGRESS.retire_on_commit(run)
            transaction.on_commit(lambda: send_rerun(request.pk))
    except IntegrityError:
        # Two moderators at once: the constraint kept the second one out.
        raise RerunRefusedError("a rerun of this run is already queued or running") from None
    return request


def queued_message(request: RerunRequest) -> str:
    """What a moderator is told once a request is stored: where it went, and whether a worker is there."""
    said = f"Rerun #{request.pk} queued on {request.queue}."
    if request.hardware not in live_hardware_classes():
        said += f" No {request.hardware} worker is live: it waits until one starts."
    return said


def send_rerun(request_id: int, *, countdown: float | None = None) -> bool:
    """Send the request's job to its hardware's queue (to run `countdown` seconds from now, for a retry). With
    the broker down the request stays queued, unsent, and the sweep sends it again."""
    request = RerunRequest.objects.select_related("run").filter(pk=request_id, state=RerunRequest.State.QUEUED).first()
    if request is None:
        return False
    if not request.job_id:  # a request stored before jobs had ids
        RerunRequest.objects.filter(pk=request.pk, job_id="").update(job_id=new_job_id())
        request.refresh_from_db()
    if not request.harness_options:  # a request stored before its options were
        options = harness_options(request.run, request.hardware)
        RerunRequest.objects.filter(pk=request.pk, harness_options={}).update(harness_options=options)
        request.refresh_from_db()
    waits = quorum.waiting_for_another(request)
    if waits:  # only workers it must avoid would take it now: it stays unsent (the sweep tries), nothing bounces
        RerunRequest.objects.filter(pk=request.pk).update(send_error=waits)
        return False
    try:
        job = rerun_job(request)
    except RerunRefusedError as refusal:
        fail_queued(request, "NOT_RUNNABLE", str(refusal))
        return False
    try:
        current_app.send_task(JOB_TASK, args=(job,), queue=request.queue, retry=False, countdown=countdown)
    except Exception as error:  # any broker failure: the sweep sends it again later
        logger.warning("rerun #%s not sent to %s: %s", request.pk, request.queue, error)
        RerunRequest.objects.filter(pk=request.pk).update(send_error=f"not sent: {error}"[:500])
        return False
    # A retry sent ahead keeps its time, which the page shows; the sweep sends it again if it is lost.
    kept = {} if countdown else {"retry_at": None}
    RerunRequest.objects.filter(pk=request.pk).update(sent_at=timezone.now(), send_error="", **kept)
    return True


def new_job_id() -> str:
    """A job's id: new for every attempt, so that an attestation answers one attempt of one request, once."""
    return secrets.token_hex(16)


def rerun_job(request: RerunRequest) -> dict[str, Any]:
    """What a worker is sent (records.worker_protocol.RerunJob), signed with the site's key: all the harness
    needs, and nothing of the site's."""
    documents = requested_documents(request)
    job = RerunJob(
        jobId=request.job_id,
        request=request.pk,
        run=request.run.run_id,
        runDigest=request.run_digest,
        definition=rerun_of(request).definition,
        hardwareClass=request.hardware,
        workload=documents.workload,
        implementation=documents.implementation,
        harness=request.harness_options,
        sentAt=timezone.now().isoformat().replace("+00:00", "Z"),
        notBy=list(request.not_by_keys or []),
    )
    return sign_job(job, site_signing_key())


def rerun_of(request: RerunRequest) -> RerunOf:
    """The original run as its rerun's result run names it: the job carries it, the collector stores it."""
    run = request.run
    return RerunOf(run.run_id, request.run_digest, run.definition.name if run.definition else run.title, request.pk)


def harness_options(run: Run, hardware: str) -> dict[str, str | int | float | bool]:
    """The options of `python -m harness run` for a rerun of this run on this class, one entry each
    (records.worker_protocol), fixed when the rerun is asked for.

    The rerun follows the protocol of the run's source (records.sources: SourceInfo.rerun_protocol), and takes
    pairs until each case's speedup interval is within half the tolerance, or the case's budget ends.
    """
    return rerun_harness_options(
        device=hardware_class_named(hardware).device,
        protocol=rerun_protocol_of(run.source),
        tolerance=settings.RERUN_TOLERANCE,
        case_budget=settings.RERUN_CASE_BUDGET_SECONDS,
        timeout=settings.RERUN_TIMEOUT_SECONDS,
        memory_mb=settings.RERUN_MEMORY_MB,
    )


def result_run_manifest(request: RerunRequest, result: dict[str, Any], observed_at: str) -> dict[str, Any]:
    """The run the site stores for a result, as the worker makes and signs it (records.attestation
    RESULT_RUN_SUBJECT): the result, observed when the harness finished (the attested finishedAt), and the
    documents of the run version asked for."""
    documents = requested_documents(request)
    return rerun_manifest(
        rerun_of(request),
        result,
        workload=documents.workload,
        implementation=documents.implementation,
        observed_at=observed_at,
    )


def signs_result_run(attested: Attested, manifest: dict[str, Any]) -> bool:
    """Whether the attestation's subject names exactly this result run: what is signed is what is stored."""
    return attested.result_run_digest is not None and attested.result_run_digest == digest(manifest["run"])


def fail_queued(request: RerunRequest, status: str, reason: str) -> None:
    """A queued request that cannot be sent (its documents are gone) fails at once, saying why."""
    failed = RerunRequest.objects.filter(pk=request.pk, state=RerunRequest.State.QUEUED).update(
        state=RerunRequest.State.FAILED, finished_at=timezone.now(), failure_status=status, failure_reason=reason
    )
    if failed:
        log_rerun(request, f"Rerun #{request.pk} failed: {status}: {reason}")
        RERUN_PROGRESS.retire_on_commit(request.run)
        _ended(request)


def cancel_rerun(request: RerunRequest, user: AbstractBaseUser | AnonymousUser) -> bool:
    """Cancel a request no worker has claimed yet."""
    cancelled = RerunRequest.objects.filter(pk=request.pk, state=RerunRequest.State.QUEUED).update(
        state=RerunRequest.State.CANCELLED, finished_at=timezone.now()
    )
    if cancelled:
        log_rerun(request, f"Cancelled rerun #{request.pk}", user=user if isinstance(user, AbstractBaseUser) else None)
        RERUN_PROGRESS.retire_on_commit(request.run)
        _ended(request)
    return bool(cancelled)


# -- running -------------------------------------------------------------------------
#
# A worker holds no database: what it did reaches the site as signed messages, which the collector
# (verification/collector.py) verifies and then hands to these functions.


def claim_job(job_id: str, instance: str, key: WorkerKey) -> RerunRequest | None:
    """A worker says it took this job: the queued request sent as this job runs now, on that worker."""
    now = timezone.now()
    avoided = RerunRequest.objects.filter(job_id=job_id).values_list("not_by_keys", flat=True).first()
    if isinstance(avoided, list) and key.key_id in avoided:
        return None  # a quorum rerun this key voted on already: it stays queued for another worker
    claimed = RerunRequest.objects.filter(
        job_id=job_id, state=RerunRequest.State.QUEUED, hardware__in=key.classes
    ).update(
        state=RerunRequest.State.RUNNING,
        attempts=F("attempts") + 1,
        worker=instance,
        worker_key=key,
        started_at=now,
        heartbeat_at=now,
        finished_at=None,
    )
    if not claimed:
        return None
    request = RerunRequest.objects.select_related("run").get(job_id=job_id)
    RERUN_PROGRESS.retire_now(request.run)
    return request


def beat_job(job_id: str, instance: str, key: WorkerKey) -> bool:
    """The worker of a running job is alive: the heartbeat the sweep reads to take back a lost job."""
    running = RerunRequest.objects.filter(
        job_id=job_id, state=RerunRequest.State.RUNNING, worker=instance, worker_key=key
    )
    return bool(running.update(heartbeat_at=timezone.now()))


def _still_ours(request: RerunRequest, attempt: int) -> Q:
    return Q(pk=request.pk, state=RerunRequest.State.RUNNING, attempts=attempt)


def record_result(request: RerunRequest, attempt: int, attested: Attested, attestation: RerunAttestation) -> None:
    """The attested result as a new run, the request's outcome and the original's evidence, in one transaction.

    Called by the collector only, once the attestation verified against the request (verification/collector.py).
    The verdict is decided on the attested figures, which stay with the request (its `attestation`). An attempt
    too noisy (or too unsure) to decide is queued again instead, while attempts are left; a harness that wrote
    no result fails the request.
    """
    result = attested.result
    seconds = attested.predicate.harnessSeconds
    if result is None:
        record_failure(request, attempt, "HARNESS_ERROR", "the harness produced no result", attestation)
        return
    with transaction.atomic():
        if not RerunRequest.objects.select_for_update().filter(_still_ours(request, attempt)).exists():
            return
        run = Run.objects.select_related("definition").get(pk=request.run_id)
        decided = judge(request, run, measured_from_result(result))
        if decided.retry and attempt < settings.RERUN_MAX_ATTEMPTS:
            retry_later(request, attempt, decided, attestation)
            return
        manifest = result_run_manifest(request, result, attested.predicate.finishedAt)
        if not signs_result_run(attested, manifest):
            # The collector checked it before it called here; a stored run must be the signed one, whoever calls.
            raise AttestationError(f"rerun #{request.pk}: the attestation does not sign the result run it would store")
        result_run = import_manifest(manifest, f"rerun:{request.pk}")
        passed = result.get("status") == "PASSED"
        judging_version, judging_harness = judged_by(result.get("harness"))
        RerunRequest.objects.filter(pk=request.pk).update(
            state=RerunRequest.State.SUCCEEDED if passed else RerunRequest.State.FAILED,
            finished_at=timezone.now(),
            result_run=result_run,
            attestation=attestation,
            verdict=decided.level,
            verdict_reason=decided.reason,
            rule_version=decided.rule_version,
            tolerance=decided.tolerance,
            retry_at=None,
            failure_status="" if passed else str(result.get("status") or ""),
            failure_reason="" if passed else str(result.get("reason") or "")[-4000:],
            log_tail=attestation.log_tail,
            harness_seconds=seconds,
            harness_version=judging_version,
            harness_digest=judging_harness,
        )
        request.refresh_from_db()
        said = f"Rerun #{request.pk} {request.state}: {request.failure_status or 'every case passed'}"
        log_rerun(request, said + f"; {_logged_verdict(decided.level)}")
        refresh_evidence(run)
        RERUN_VERDICT.retire_on_commit(run)
        RERUN_RESULT.retire_on_commit(result_run)
        _ended(request)


def judge(request: RerunRequest, run: Run, measured: Any) -> Verdict:
    """The evidence rule (records.rerun.verdict) on one rerun: the claim of the run version that was rerun,
    the tolerance of today's settings, and whether the rerun ran on the run's own hardware class."""
    reported = document_value(request.run_digest) or document_value(run.digest) or {}
    claim = reported_claim(reported.get("spec") or {}, _reported_latency(request, run, reported))
    own_hardware = request.hardware == run_hardware_class(run)
    return verdict(claim, measured, settings.RERUN_TOLERANCE, own_hardware=own_hardware)


def _reported_latency(request: RerunRequest, run: Run, reported: Mapping[str, Any]) -> float | None:
    """The latency the version that was rerun reports: the run's (kept where a rerun ranks it by its own), or, for
    an earlier version, the one its document reports (records.summary.reported_latency)."""
    if request.run_digest == run.digest:
        return run.reported_latency
    latency = reported_latency(reported.get("spec") or {}, run.primary_statistic)
    return float(latency) if isinstance(latency, (int, float)) and not isinstance(latency, bool) else None


def retry_later(request: RerunRequest, attempt: int, decided: Verdict, attestation: RerunAttestation) -> None:
    """Queue an inconclusive attempt again, as a new job, sent once this transaction commits to run
    RERUN_RETRY_AFTER_SECONDS later (the sweep sends it then if the broker lost it)."""
    retry_at = timezone.now() + timedelta(seconds=settings.RERUN_RETRY_AFTER_SECONDS)
    said = f"attempt {attempt} was inconclusive: {decided.reason}"
    RerunRequest.objects.filter(_still_ours(request, attempt)).update(
        attempt_reasons=[*request.attempt_history, decided.reason],
        state=RerunRequest.State.QUEUED,
        job_id=new_job_id(),
        worker="",
        worker_key=None,
        sent_at=None,
        retry_at=retry_at,
        verdict_reason=said,
        log_tail=attestation.log_tail,
        harness_seconds=attestation.harness_seconds,
    )
    log_rerun(request, f"Rerun #{request.pk}: {said}; it runs again")
    RERUN_PROGRESS.retire_on_commit(request.run)
    transaction.on_commit(partial(send_rerun, request.pk, countdown=settings.RERUN_RETRY_AFTER_SECONDS))


def record_failure(
    request: RerunRequest, attempt: int, status: str, reason: str, attestation: RerunAttestation | None = None
) -> None:
    with transaction.atomic():
        failed = RerunRequest.objects.filter(_still_ours(request, attempt)).update(
            state=RerunRequest.State.FAILED,
            finished_at=timezone.now(),
            failure_status=status,
            failure_reason=reason,
            attestation=attestation,
            log_tail=attestation.log_tail if attestation else "",
            harness_seconds=attestation.harness_seconds if attestation else None,
        )
        if failed:
            log_rerun(request, f"Rerun #{request.pk} failed: {status}: {reason}")
            RERUN_PROGRESS.retire_on_commit(request.run)
            _ended(request)


# -- evidence --------------------------------------------------------------------------


def refresh_evidence(run: Run) -> EvidenceChange | None:
    """Apply the evidence rule: the conclusive reruns of the run's current version on its own hardware class whose
    attestations still verify decide, as the quorum reads them (verification.quorum). A rerun of an earlier version
    checked figures the run no longer reports: with no rerun of this version (a new version), the run is back to
    what its source reported. Reruns of this version whose attestations no longer verify move nothing."""
    own = RerunRequest.objects.filter(
        run=run, run_digest=run.digest, hardware=run_hardware_class(run), result_run__isnull=False
    )
    standing = [
        request
        for request in own.select_related("attestation__worker_key").order_by("-finished_at", "-id")
        # A rerun whose stored attestation no longer verifies moves nothing; one decided before reruns were
        # attested has nothing to verify, and stands as it was decided.
        if request.attestation is None or request.attestation.verified() is not None
    ]
    # The quorum (records/quorum.py) over the conclusive ones: one is enough to show reproduced ("by 1 of 2
    # workers"), but workers that disagree take the run back to reported until another decides.
    decided = quorum.standing_of(standing)
    level = decided.quorum.level
    decider = decided.decider or next(iter(standing), None)
    _rank_by_what_decided(run, decided.agreeing, decider, level)
    if level == run.evidence:
        return None
    if decider is None:
        if own.exists():
            # This version's reruns are there, but no stored attestation of theirs verifies: left as decided, or an
            # envelope edited where it is stored would take a refuted run back to reported.
            return None
        change = EvidenceChange.objects.create(run=run, previous=run.evidence, evidence=level, version=run.digest)
    else:
        change = EvidenceChange.objects.create(
            run=run,
            previous=run.evidence,
            evidence=level,
            rerun=decider,
            rule_version=decider.rule_version,
            tolerance=decider.tolerance,
        )
    Run.objects.filter(pk=run.pk).update(evidence=level, updated_at=timezone.now())
    run.evidence = level
    # A run not reproduced is ranked after the others: its group's figures change with its level.
    refresh_run_counters([run.pk])
    run.refresh_from_db(fields=RUN_COUNTERS)
    refresh_group_figures([run.group_id])
    return change


def refresh_evidence_of_new_versions(sender: object, run_pks: Iterable[int], **kwargs: object) -> None:
    """After an import gave these runs new versions (runs.ingest.versions_added, which also set each one's latency
    back to the one it reports): the evidence rule on each whose level a rerun had moved, which a rerun of an
    earlier version decides no more."""
    moved = Run.objects.filter(pk__in=list(run_pks)).exclude(evidence=Run.Evidence.REPORTED)
    for run in moved.order_by("pk"):
        refresh_evidence(run)


def _rank_by_what_decided(run: Run, agreeing: Sequence[RerunRequest], decider: RerunRequest | None, level: str) -> None:
    """The latency the run is ranked by (records.rerun.ranked_latency): where its reported one was beyond the
    tolerance of what the reruns that reproduced it measured, the median of those (one per worker key, as the
    quorum counts them), else the reported one; its group's figures follow."""
    reported = run.reported_latency
    measured = [r.result_run.latency_ns for r in agreeing if r.result_run and r.result_run.latency_ns]
    rerun_ns = statistics.median(measured) if measured else None
    tolerance = settings.RERUN_TOLERANCE if decider is None or decider.tolerance is None else decider.tolerance
    latency = ranked_latency(reported, rerun_ns, level, tolerance)
    kept = reported if latency != reported else None
    if (latency, kept) == (run.latency_ns, run.reported_latency_ns):
        return
    Run.objects.filter(pk=run.pk).update(latency_ns=latency, reported_latency_ns=kept)
    run.latency_ns, run.reported_latency_ns = latency, kept
    refresh_group_figures([run.group_id])


@dataclass
class Reevaluated:
    changed: int = 0
    change: EvidenceChange | None = None
    # Reruns decided before their figures were attested: left as decided.
    unattested: int = 0
    # Reruns whose stored attestation no longer verifies (edited where it is stored): left as decided, and they
    # decide no evidence (refresh_evidence).
    unverified: int = 0


def reevaluate_run(run: Run) -> Reevaluated:
    """Apply today's rule to every stored rerun of a run, on the figures its worker attested (never on a run,
    which is not where a verdict's evidence lives); the run's evidence follows."""
    outcome = Reevaluated()
    with transaction.atomic():
        reruns = RerunRequest.objects.select_for_update(of=("self",)).filter(run=run, result_run__isnull=False)
        for request in reruns.select_related("attestation__worker_key"):
            if request.attestation is None:
                outcome.unattested += 1
                continue
            attested = request.attestation.verified()
            if attested is None or attested.result is None:
                outcome.unverified += attested is None
                continue
            decided = judge(request, run, measured_from_result(attested.result))
            verdict_now = (decided.level, decided.reason, decided.rule_version, decided.tolerance)
            if verdict_now == (request.verdict, request.verdict_reason, request.rule_version, request.tolerance):
                continue
            RerunRequest.objects.filter(pk=request.pk).update(
                verdict=decided.level,
                verdict_reason=decided.reason,
                rule_version=decided.rule_version,
                tolerance=decided.tolerance,
            )
            said = f"Rerun #{request.pk} re-evaluated under rule {decided.rule_version}"
            log_rerun(request, f"{said}: {_logged_verdict(decided.level)}")
            outcome.changed += 1
            _ended(request)  # decided again: what waits on its verdict follows it
        outcome.change = refresh_evidence(run)
        if outcome.changed or outcome.change:
            RERUN_VERDICT.retire_on_commit(run)
    return outcome


# -- worker heartbeats -----------------------------------------------------------------


def beat_worker(name: str, classes: list[str], key_id: str = "") -> None:
    """A worker's heartbeat: it serves these hardware classes, signs with this key, and is alive now."""
    now = timezone.now()
    beat = {"hardware": ",".join(classes), "seen_at": now, "key_id": key_id}
    RerunWorker.objects.update_or_create(name=name, defaults=beat, create_defaults={**beat, "started_at": now})


def forget_worker(name: str) -> None:
    """A worker that stops cleanly says so at once, rather than going silent."""
    RerunWorker.objects.filter(name=name).delete()


# -- the sweep -------------------------------------------------------------------------


@dataclass
class SweepResult:
    resent: int = 0
    retried: int = 0
    failed: int = 0


# When the sweep last ran (verification.reruns.sweep_reruns), kept in the cache that every process of the site shares.
SWEPT_AT = "reruns:swept-at"


def _swept_at(value: Any) -> datetime | None:
    """When the sweep last ran, as SWEPT_AT keeps it (seconds since the epoch: the cache holds JSON,
    web/json_cache.py); None for anything else."""
    if type(value) not in (int, float):
        return None
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):  # out of range, or NaN
        return None


def sweep_reruns() -> SweepResult:
    """Send again what the broker lost; take back, retry or fail what a lost worker left running."""
    now = timezone.now()
    swept = SweepResult()
    last = _swept_at(cache.get(SWEPT_AT))
    cache.set(SWEPT_AT, now.timestamp(), timeout=None)
    resend_before = now - timedelta(seconds=settings.RERUN_RESEND_AFTER_SECONDS)
    # A quorum's rerun still queued a sweep after it was sent was most likely dropped by a worker that voted already
    # (its job's notBy): sent again at once for another worker, not after the broker's long wait.
    dropped = ~Q(not_by_keys=[]) & Q(sent_at__lt=now - timedelta(seconds=settings.RERUN_SWEEP_SECONDS))
    waiting = (
        RerunRequest.objects.filter(state=RerunRequest.State.QUEUED)
        .filter(Q(sent_at__isnull=True) | Q(sent_at__lt=resend_before) | dropped)
        .filter(Q(retry_at__isnull=True) | Q(retry_at__lte=now))
    )
    for request_id in waiting.values_list("pk", flat=True):
        swept.resent += send_rerun(request_id)
    stale_before = now - timedelta(seconds=settings.RERUN_STALE_AFTER_SECONDS)
    if last is not None and last < stale_before:
        # The site itself was away (its worker restarted, or the host stalled) for longer than a worker may be
        # silent: the beats sent meanwhile may still wait on the results queue, so no silence proves anything yet.
        return swept
    for request in RerunRequest.objects.filter(state=RerunRequest.State.RUNNING, heartbeat_at__lt=stale_before):
        if _take_back(request, stale_before):
            swept.retried += 1
        else:
            swept.failed += 1
    return swept


def _take_back(request: RerunRequest, stale_before: Any) -> bool:
    """Requeue a request whose worker went silent (True), or fail it after its last attempt (False)."""
    silent = Q(
        pk=request.pk, state=RerunRequest.State.RUNNING, attempts=request.attempts, heartbeat_at__lt=stale_before
    )
    if request.attempts < settings.RERUN_MAX_ATTEMPTS:
        requeued = RerunRequest.objects.filter(silent).update(
            state=RerunRequest.State.QUEUED, job_id=new_job_id(), sent_at=None, worker="", worker_key=None
        )
        if requeued:
            log_rerun(request, f"Rerun #{request.pk}: worker {request.worker} stopped; attempt {request.attempts + 1}")
            send_rerun(request.pk)
            return True
        return False
    reason = f"worker {request.worker} stopped heartbeating; gave up after {request.attempts} attempts"
    if RerunRequest.objects.filter(silent).update(
        state=RerunRequest.State.FAILED, finished_at=timezone.now(), failure_status="WORKER_LOST", failure_reason=reason
    ):
        log_rerun(request, f"Rerun #{request.pk} failed: {reason}")
        RERUN_PROGRESS.retire_now(request.run)
        _ended(request)
    return False


# -- audit log and pages ------------------------------------------------------------------


def system_user() -> AbstractBaseUser:
    """The account the audit log names for acts no person did (the worker, the sweep, the command line)."""
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(
        username=SYSTEM_USERNAME, defaults={"is_active": False, "is_staff": False}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def _logged_verdict(level: str) -> str:
    """A verdict as a log line says it: the evidence levels' spelling in lower case; an empty one is 'inconclusive'."""
    return EVIDENCE_LABELS[level or INCONCLUSIVE_LEVEL].lower()


def log_rerun(request: RerunRequest, message: str, user: AbstractBaseUser | None = None) -> None:
    """One line in the admin's audit log, on the run, so its history reads as the run's moderation history.

    `user` is the person who acted (asked, cancelled); everything else (a result, a failure, a retry, a
    re-evaluation) is the worker's, the sweep's or a command's act, logged under the system account.
    """
    actor = user or system_user()
    LogEntry.objects.log_actions(
        user_id=actor.pk, queryset=[request.run], action_flag=CHANGE, change_message=message, single_object=True
    )
