"""Controlled reruns: asked for by moderators, run by workers on KernelIndex's own hardware.

The `RerunRequest` row is the source of truth; the broker only carries its id.
A worker claims a queued request with a conditional UPDATE, so a message
delivered twice runs once; it writes a heartbeat while the harness runs, and
writes the result in one transaction, only while its claim still holds. The
sweep re-sends requests the broker lost and takes back those whose worker
stopped heartbeating. Only a rerun's verdict moves a run's evidence level.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from celery import current_app
from django import db
from django.conf import settings
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, PermissionsMixin
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from records.canonical import canonical_text, parse_json
from records.rerun import (
    INCONCLUSIVE,
    RerunOf,
    Verdict,
    measured_from_result,
    measured_from_run,
    reported_claim,
    rerun_harness_options,
    rerun_manifest,
    verdict,
)
from records.sources import rerun_protocol_of
from records.sources.hardware import UnknownHardwareClassError, hardware_class_named
from records.sources.runnable import harness_definition
from runs.figures import RUN_COUNTERS, refresh_group_figures, refresh_run_counters
from runs.ingest import import_manifest
from runs.models import EVIDENCE_LABELS, Document, EvidenceChange, RerunRequest, RerunWorker, Run
from runs.models import INCONCLUSIVE as INCONCLUSIVE_LEVEL
from runs.selectors import document_value, live_hardware_classes, run_hardware_class
from web.scopes import RERUN_PROGRESS, RERUN_RESULT, RERUN_VERDICT

logger = logging.getLogger(__name__)

SYSTEM_USERNAME = "kernelindex"
# runs.tasks.execute_rerun, sent by name: the task module imports this one.
EXECUTE_TASK = "runs.tasks.execute_rerun"
LOG_TAIL_CHARS = 4000
# What a harness process may see of the worker's environment: nothing of the app's settings or secrets.
# The thread counts are the machine's timing setup (see harness_environment).
HARNESS_ENVIRONMENT = (
    "PATH",
    "LANG",
    "LC_ALL",
    "HOME",
    "TMPDIR",
    "CUDA_VISIBLE_DEVICES",
    "KERNELINDEX_HARDWARE_CLASS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
)


class RerunRefusedError(Exception):
    """A rerun that cannot be asked for; the message says why, for the moderator."""


def may_request_rerun(user: PermissionsMixin | AnonymousUser) -> bool:
    """Asking for a rerun (or cancelling one) needs its own permission: being staff is not enough."""
    return user.has_perm("runs.request_rerun")


@dataclass(frozen=True)
class HarnessOutcome:
    """What one harness process left: its JSON result (None if it produced none), its log's tail, its time."""

    result: dict[str, Any] | None
    log_tail: str
    seconds: float


@dataclass(frozen=True)
class RunnableDocuments:
    """The Workload (definition, reference, cases) and the Implementation (the solution) a rerun hands the harness."""

    workload: dict[str, Any]
    implementation: dict[str, Any]


# -- asking ------------------------------------------------------------------------


def runnable_documents(run: Run) -> RunnableDocuments:
    """The run's definition (with its reference and cases) and solution, or RerunRefusedError saying what is missing."""
    stored = Document.objects.in_bulk([d for d in (run.workload_digest, run.implementation_digest) if d])
    workload = stored.get(run.workload_digest)
    implementation = stored.get(run.implementation_digest)
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
    run: Run, *, user: AbstractBaseUser | AnonymousUser | None, hardware: str | None = None, reason: str = ""
) -> RerunRequest:
    """Store a request and send it once the transaction commits; refuse what cannot or need not run."""
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
    """Hand the request's id to its hardware's queue (to run `countdown` seconds from now, for a retry). With
    the broker down the request stays queued, unsent, and the sweep sends it again."""
    request = RerunRequest.objects.filter(pk=request_id, state=RerunRequest.State.QUEUED).first()
    if request is None:
        return False
    try:
        current_app.send_task(EXECUTE_TASK, args=(request.pk,), queue=request.queue, retry=False, countdown=countdown)
    except Exception as error:  # any broker failure: the sweep sends it again later
        logger.warning("rerun #%s not sent to %s: %s", request.pk, request.queue, error)
        RerunRequest.objects.filter(pk=request.pk).update(send_error=f"not sent: {error}"[:500])
        return False
    # A retry sent ahead keeps its time, which the page shows; the sweep sends it again if it is lost.
    kept = {} if countdown else {"retry_at": None}
    RerunRequest.objects.filter(pk=request.pk).update(sent_at=timezone.now(), send_error="", **kept)
    return True


def cancel_rerun(request: RerunRequest, user: AbstractBaseUser | AnonymousUser) -> bool:
    """Cancel a request no worker has claimed yet."""
    cancelled = RerunRequest.objects.filter(pk=request.pk, state=RerunRequest.State.QUEUED).update(
        state=RerunRequest.State.CANCELLED, finished_at=timezone.now()
    )
    if cancelled:
        log_rerun(request, f"Cancelled rerun #{request.pk}", user=user if isinstance(user, AbstractBaseUser) else None)
        RERUN_PROGRESS.retire_on_commit(request.run)
    return bool(cancelled)


# -- running -------------------------------------------------------------------------


def execute_rerun(request_id: int) -> None:
    """What the Celery task does: claim, run the harness with a heartbeat, record the outcome."""
    claim = claim_rerun(request_id, worker_name())
    if claim is None:
        return
    request, attempt = claim
    try:
        documents = runnable_documents(request.run)
    except RerunRefusedError as refusal:
        record_failure(request, attempt, "NOT_RUNNABLE", str(refusal))
        return
    with tempfile.TemporaryDirectory(prefix=f"rerun-{request.pk}-") as folder:
        outcome = run_harness(request, attempt, documents, Path(folder))
    if outcome is None:
        return  # the claim was lost: another attempt owns the request now
    if outcome.result is None:
        record_failure(request, attempt, "HARNESS_ERROR", "the harness produced no result", outcome)
    else:
        record_result(request, attempt, outcome.result, outcome)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def claim_rerun(request_id: int, worker: str) -> tuple[RerunRequest, int] | None:
    """Take a queued request for this worker; None when another has it or it is over."""
    now = timezone.now()
    claimed = RerunRequest.objects.filter(pk=request_id, state=RerunRequest.State.QUEUED).update(
        state=RerunRequest.State.RUNNING,
        attempts=F("attempts") + 1,
        worker=worker,
        started_at=now,
        heartbeat_at=now,
        finished_at=None,
    )
    if not claimed:
        return None
    request = RerunRequest.objects.select_related("run").get(pk=request_id)
    RERUN_PROGRESS.retire_now(request.run)
    return request, request.attempts


def _still_ours(request: RerunRequest, attempt: int) -> Q:
    return Q(pk=request.pk, state=RerunRequest.State.RUNNING, attempts=attempt)


def harness_environment(hardware: str) -> dict[str, str]:
    """The part of the worker's environment a harness process gets (HARNESS_ENVIRONMENT).

    On the CPU, kernels are timed on one thread unless the worker says otherwise: an operation that runs
    in parallel waits for every core it uses, and on a machine doing other work a rerun measured up to a
    hundred times the figure a quiet machine gives. The demo's reported figures were measured so.
    """
    environment = {name: os.environ[name] for name in HARNESS_ENVIRONMENT if name in os.environ}
    if hardware_class_named(hardware).device == "cpu":
        environment.setdefault("OMP_NUM_THREADS", "1")
    return environment


def run_harness(
    request: RerunRequest, attempt: int, documents: RunnableDocuments, folder: Path
) -> HarnessOutcome | None:
    """Run `python -m harness run` on the documents; None if the claim was lost meanwhile."""
    folder.mkdir(exist_ok=True)
    command = harness_command(request, documents, folder)
    environment = harness_environment(request.hardware)
    log_path = folder / "harness.log"
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=settings.BASE_DIR,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
        claim_held = _heartbeat_until_done(process, request, attempt)
    seconds = time.monotonic() - started
    log_tail = log_path.read_bytes()[-LOG_TAIL_CHARS:].decode(errors="replace")
    if not claim_held:
        return None
    output = folder / "result.json"
    result = None
    if process.returncode == 0 and output.is_file():
        try:
            result = parse_json(output.read_bytes())
        except ValueError:
            result = None
    return HarnessOutcome(result, log_tail, seconds)


def harness_command(request: RerunRequest, documents: RunnableDocuments, folder: Path) -> list[str]:
    """Write the definition, its cases and the solution in the formats the harness reads.

    The rerun follows the protocol of the run's source (records.sources: SourceInfo.rerun_protocol), with the
    options every rerun takes (records.rerun.rerun_harness_options: pairs until the interval is within half
    the tolerance, or the case budget ends).
    """
    # json.dumps, not the canonical form: the order of inputs and outputs is the order of the arguments.
    (folder / "definition.json").write_text(json.dumps(harness_definition(documents.workload)))
    cases = documents.workload["spec"].get("cases") or []
    (folder / "workload.jsonl").write_text("".join(canonical_text(case) + "\n" for case in cases))
    (folder / "solution.json").write_text(canonical_text(documents.implementation["spec"]["solution"]))
    command = [sys.executable, "-m", "harness", "run"]
    command += ["--definition", str(folder / "definition.json"), "--workload", str(folder / "workload.jsonl")]
    command += ["--solution", str(folder / "solution.json"), "--json", str(folder / "result.json")]
    return command + rerun_harness_options(
        device=hardware_class_named(request.hardware).device,
        protocol=rerun_protocol_of(request.run.source),
        tolerance=settings.RERUN_TOLERANCE,
        case_budget=settings.RERUN_CASE_BUDGET_SECONDS,
        timeout=settings.RERUN_TIMEOUT_SECONDS,
        memory_mb=settings.RERUN_MEMORY_MB,
        unsandboxed=settings.RERUN_UNSANDBOXED,
    )


def _die_with_parent() -> None:
    """In the harness process: die with the worker, so a killed worker leaves no evaluation running."""
    import ctypes
    import signal

    PR_SET_PDEATHSIG = 1  # noqa: N806 (the kernel's name)
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _heartbeat_until_done(process: subprocess.Popen[bytes], request: RerunRequest, attempt: int) -> bool:
    """Beat while the harness runs; if the claim was taken back meanwhile, stop the harness and say so."""
    # The limit the harness enforces itself, and a margin for its start and its own clean-up.
    deadline = settings.RERUN_TIMEOUT_SECONDS + 120
    waited = 0.0
    try:
        while True:
            try:
                process.wait(timeout=settings.RERUN_HEARTBEAT_SECONDS)
                return True
            except subprocess.TimeoutExpired:
                waited += settings.RERUN_HEARTBEAT_SECONDS
            beat = RerunRequest.objects.filter(_still_ours(request, attempt)).update(heartbeat_at=timezone.now())
            if not beat or waited > deadline:
                process.kill()
                process.wait()
                return bool(beat)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def record_result(request: RerunRequest, attempt: int, result: dict[str, Any], outcome: HarnessOutcome) -> None:
    """The result as a new run, the request's outcome and the original's evidence, in one transaction.

    An attempt too noisy (or too unsure) to decide is queued again instead, while attempts are left.
    """
    with transaction.atomic():
        if not RerunRequest.objects.select_for_update().filter(_still_ours(request, attempt)).exists():
            return
        run = Run.objects.select_related("definition").get(pk=request.run_id)
        decided = judge(request, run, measured_from_result(result))
        if decided.retry and attempt < settings.RERUN_MAX_ATTEMPTS:
            retry_later(request, attempt, decided, outcome)
            return
        documents = runnable_documents(run)
        of = RerunOf(run.run_id, request.run_digest, run.definition.name if run.definition else run.title, request.pk)
        manifest = rerun_manifest(
            of,
            result,
            workload=documents.workload,
            implementation=documents.implementation,
            observed_at=timezone.now().isoformat().replace("+00:00", "Z"),
        )
        result_run = import_manifest(manifest, f"rerun:{request.pk}")
        passed = result.get("status") == "PASSED"
        RerunRequest.objects.filter(pk=request.pk).update(
            state=RerunRequest.State.SUCCEEDED if passed else RerunRequest.State.FAILED,
            finished_at=timezone.now(),
            result_run=result_run,
            verdict=decided.level,
            verdict_reason=decided.reason,
            rule_version=decided.rule_version,
            tolerance=decided.tolerance,
            retry_at=None,
            failure_status="" if passed else str(result.get("status") or ""),
            failure_reason="" if passed else str(result.get("reason") or "")[-4000:],
            log_tail=outcome.log_tail,
            harness_seconds=outcome.seconds,
        )
        request.refresh_from_db()
        said = f"Rerun #{request.pk} {request.state}: {request.failure_status or 'every case passed'}"
        log_rerun(request, said + f"; {_logged_verdict(decided.level)}")
        refresh_evidence(run)
        RERUN_VERDICT.retire_on_commit(run)
        RERUN_RESULT.retire_on_commit(result_run)


def judge(request: RerunRequest, run: Run, measured: Any) -> Verdict:
    """The evidence rule (records.rerun.verdict) on one rerun: the claim of the run version that was rerun,
    the tolerance of today's settings, and whether the rerun ran on the run's own hardware class."""
    reported = document_value(request.run_digest) or document_value(run.digest) or {}
    claim = reported_claim(reported.get("spec") or {}, run.latency_ns)
    own_hardware = request.hardware == run_hardware_class(run)
    return verdict(claim, measured, settings.RERUN_TOLERANCE, own_hardware=own_hardware)


def retry_later(request: RerunRequest, attempt: int, decided: Verdict, outcome: HarnessOutcome) -> None:
    """Queue an inconclusive attempt again, sent once this transaction commits to run RERUN_RETRY_AFTER_SECONDS
    later (the sweep sends it then if the broker lost it)."""
    retry_at = timezone.now() + timedelta(seconds=settings.RERUN_RETRY_AFTER_SECONDS)
    said = f"attempt {attempt} was inconclusive: {decided.reason}"
    RerunRequest.objects.filter(_still_ours(request, attempt)).update(
        state=RerunRequest.State.QUEUED,
        worker="",
        sent_at=None,
        retry_at=retry_at,
        verdict_reason=said,
        log_tail=outcome.log_tail,
        harness_seconds=outcome.seconds,
    )
    log_rerun(request, f"Rerun #{request.pk}: {said}; it runs again")
    RERUN_PROGRESS.retire_on_commit(request.run)
    transaction.on_commit(partial(send_rerun, request.pk, countdown=settings.RERUN_RETRY_AFTER_SECONDS))


def record_failure(
    request: RerunRequest, attempt: int, status: str, reason: str, outcome: HarnessOutcome | None = None
) -> None:
    with transaction.atomic():
        failed = RerunRequest.objects.filter(_still_ours(request, attempt)).update(
            state=RerunRequest.State.FAILED,
            finished_at=timezone.now(),
            failure_status=status,
            failure_reason=reason,
            log_tail=outcome.log_tail if outcome else "",
            harness_seconds=outcome.seconds if outcome else None,
        )
        if failed:
            log_rerun(request, f"Rerun #{request.pk} failed: {status}: {reason}")
            RERUN_PROGRESS.retire_on_commit(request.run)


# -- evidence --------------------------------------------------------------------------


def refresh_evidence(run: Run) -> EvidenceChange | None:
    """Apply the evidence rule: the latest conclusive rerun on the run's own hardware class decides;
    with none (reevaluate may leave none), the run is back to what its source reported."""
    own = RerunRequest.objects.filter(run=run, hardware=run_hardware_class(run), result_run__isnull=False).order_by(
        "-finished_at", "-id"
    )
    latest = own.exclude(verdict=INCONCLUSIVE).first()
    level = latest.verdict if latest else Run.Evidence.REPORTED
    decider = latest or own.first()
    if decider is None or level == run.evidence:
        return None
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


def reevaluate_run(run: Run) -> tuple[int, EvidenceChange | None]:
    """Apply today's rule to every stored rerun of a run, from its result run; the run's evidence follows.

    Returns how many verdicts changed and the evidence change, if the level moved.
    """
    changed = 0
    with transaction.atomic():
        reruns = RerunRequest.objects.select_for_update().filter(run=run, result_run__isnull=False)
        for request in reruns.select_related("result_run"):
            assert request.result_run is not None
            stored = document_value(request.result_run.digest)
            if stored is None:
                continue
            decided = judge(request, run, measured_from_run(stored["spec"]))
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
            changed += 1
        change = refresh_evidence(run)
        if changed or change:
            RERUN_VERDICT.retire_on_commit(run)
    return changed, change


# -- worker heartbeats -----------------------------------------------------------------


def beat_worker(name: str, classes: list[str]) -> None:
    """A worker's heartbeat: it serves these hardware classes, and is alive now."""
    now = timezone.now()
    RerunWorker.objects.update_or_create(
        name=name,
        defaults={"hardware": ",".join(classes), "seen_at": now},
        create_defaults={"hardware": ",".join(classes), "seen_at": now, "started_at": now},
    )


def forget_worker(name: str) -> None:
    """A worker that stops cleanly says so at once, rather than going silent."""
    RerunWorker.objects.filter(name=name).delete()


class WorkerHeartbeat(threading.Thread):
    """Beats for a worker every RERUN_HEARTBEAT_SECONDS, from a thread of its main process, until stopped."""

    def __init__(self, name: str, classes: list[str]) -> None:
        super().__init__(name=f"rerun-heartbeat-{name}", daemon=True)
        self.worker, self.classes = name, classes
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                beat_worker(self.worker, self.classes)
            except Exception as error:  # a database blip: the next beat tries again
                logger.warning("worker %s: heartbeat not written: %s", self.worker, error)
            finally:
                # No connection is held between beats, so none is inherited by the pool's forked children.
                db.connections.close_all()
            self.stopped.wait(settings.RERUN_HEARTBEAT_SECONDS)

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=10)
        try:
            forget_worker(self.worker)
        finally:
            db.connections.close_all()


# -- the sweep -------------------------------------------------------------------------


@dataclass
class SweepResult:
    resent: int = 0
    retried: int = 0
    failed: int = 0


def sweep_reruns() -> SweepResult:
    """Send again what the broker lost; take back, retry or fail what a lost worker left running."""
    now = timezone.now()
    swept = SweepResult()
    resend_before = now - timedelta(seconds=settings.RERUN_RESEND_AFTER_SECONDS)
    waiting = (
        RerunRequest.objects.filter(state=RerunRequest.State.QUEUED)
        .filter(Q(sent_at__isnull=True) | Q(sent_at__lt=resend_before))
        .filter(Q(retry_at__isnull=True) | Q(retry_at__lte=now))
    )
    for request_id in waiting.values_list("pk", flat=True):
        swept.resent += send_rerun(request_id)
    stale_before = now - timedelta(seconds=settings.RERUN_STALE_AFTER_SECONDS)
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
        if RerunRequest.objects.filter(silent).update(state=RerunRequest.State.QUEUED, sent_at=None, worker=""):
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
