"""The collector: where a rerun worker's word enters the index, and the only way to a rerun's verdict.

A worker holds no database (harness/parent/worker.py). Everything it sends on the
results queue (verification.tasks.collect_worker_message) is a DSSE envelope of a
WorkerMessage (records.worker_protocol), signed with its key. Here each is
verified against the worker registry (a key registered on this site, not
revoked, for the classes it names), and a result's attestation against the
request it answers: the job the request is running now, on the worker that took
it, for the run version, the documents, the harness options and the hardware
class it was asked for, never answered before, signing the very result run that
will be stored. Only then is anything written (verification.reruns.record_result). Every refusal
is one log line and writes nothing.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from records.attestation import (
    MESSAGE_PAYLOAD_TYPE,
    AttestationError,
    Attested,
    moment,
    read_envelope,
    read_statement,
    verify_envelope,
)
from records.errors import RecordError
from records.worker_protocol import WorkerMessage
from runs.selectors import document_value
from verification import reruns
from verification.models import RerunAttestation, RerunRequest, WorkerKey

logger = logging.getLogger(__name__)


class RefusedError(Exception):
    """A worker's message the collector will not act on; the message says why."""


def collect(envelope: Any) -> str | None:
    """Act on a worker's signed message: None when it was taken, else why it was refused (and logged)."""
    try:
        key, message = verified_message(envelope)
        if message.type == "started":
            _started(key, message)
        elif message.type == "beat":
            _beat(key, message)
        elif message.type == "stopped":
            reruns.forget_worker(message.instance)
        else:
            record_attestation(key, message)
    except (RefusedError, AttestationError, RecordError) as refusal:
        logger.warning("worker message refused: %s", refusal)
        return str(refusal)
    return None


def verified_message(envelope: Any) -> tuple[WorkerKey, WorkerMessage]:
    """The message in an envelope signed by the registered, unrevoked key of the worker it names."""
    checked = read_envelope(envelope)
    keyid = checked.signatures[0].keyid
    key = WorkerKey.objects.registered_here().filter(key_id=keyid).first()
    if key is None:
        raise RefusedError(f"signed by key {keyid[:23]}…, which no worker is registered with here")
    body = verify_envelope(checked, key.public_key)
    if key.revoked_at is not None:
        raise RefusedError(f"signed by worker {key.name}'s key, revoked at {key.revoked_at:%Y-%m-%d %H:%M:%S}")
    if checked.payloadType != MESSAGE_PAYLOAD_TYPE:
        raise RefusedError(f"worker {key.name} sent a {checked.payloadType!r}, not a worker's message")
    try:
        message = WorkerMessage.model_validate(body)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise RefusedError(f"worker {key.name} sent no worker's message: {where}: {problem['msg']}") from None
    if message.worker != key.name:
        raise RefusedError(f"signed by worker {key.name}'s key, but from worker {message.worker!r}")
    return key, message


def _started(key: WorkerKey, message: WorkerMessage) -> None:
    if message.job is None or reruns.claim_job(message.job, message.instance, key) is None:
        raise RefusedError(
            f"worker {message.instance} took job {message.job}, which is no queued job of its classes "
            f"({key.hardware}): taken by another, over, never sent, or left to another worker than one that reran "
            "its version already (a quorum's rerun)"
        )


def beat_window() -> timedelta:
    """How old a beat may be when it is read: old enough for a web tier that reads late under load, too young
    for one sent again (by whoever can write to the broker) to keep a lost worker's job for long."""
    return timedelta(seconds=max(60.0, 10 * settings.RERUN_STALE_AFTER_SECONDS))


def _beat(key: WorkerKey, message: WorkerMessage) -> None:
    """A worker is alive: its heartbeat, as of when it is read (the site's clock)."""
    if abs(timezone.now() - moment(message.at)) > beat_window():
        raise RefusedError(f"worker {message.instance}'s beat of {message.at} is stale, or from the future")
    if not message.classes or not set(message.classes) <= set(key.classes):
        raise RefusedError(f"worker {message.instance} beats for {message.classes}, not its classes ({key.hardware})")
    reruns.beat_worker(message.instance, message.classes, key.key_id)
    if message.job is not None:
        reruns.beat_job(message.job, message.instance, key)


def record_attestation(key: WorkerKey, message: WorkerMessage) -> RerunAttestation:
    """Check a result's attestation against the request it answers; then record it, its result and verdict."""
    if message.attestation is None or message.job is None:
        raise RefusedError(f"worker {message.instance} sent a result without its attestation or job")
    checked = read_envelope(message.attestation)
    if checked.signatures[0].keyid != key.key_id:
        raise RefusedError(f"worker {key.name}'s result carries an attestation signed by another key")
    attested = read_statement(checked.payloadType, verify_envelope(checked, key.public_key), key.key_id)
    if attested.worker != key.name or attested.job_id != message.job:
        raise RefusedError(
            f"worker {key.name}'s result carries an attestation of {attested.worker}, job {attested.job_id}"
        )
    if attested.hardware_class not in key.classes:
        raise RefusedError(f"worker {key.name} is not registered for class {attested.hardware_class!r}")
    with transaction.atomic():
        request = RerunRequest.objects.select_for_update().filter(job_id=attested.job_id).first()
        if RerunAttestation.objects.filter(job_id=attested.job_id).exists():
            raise RefusedError(f"job {attested.job_id} was attested already: a replay")
        if request is None:
            raise RefusedError(f"job {attested.job_id} is no request's current job (over, retried, or never sent)")
        _matches(request, key, message.instance, attested)
        attestation = RerunAttestation.objects.create(
            request=request,
            attempt=request.attempts,
            job_id=attested.job_id,
            worker_key=key,
            envelope=message.attestation,
            received_at=timezone.now(),
            log_tail=message.logTail,
            harness_seconds=attested.predicate.harnessSeconds,
        )
        reruns.record_result(request, request.attempts, attested, attestation)
    return attestation


def _matches(request: RerunRequest, key: WorkerKey, instance: str, attested: Attested) -> None:
    """The attestation answers this request as it runs now: its worker, class, run version and documents."""
    if request.state != RerunRequest.State.RUNNING:
        raise RefusedError(f"rerun #{request.pk} is {request.state}, not running: job {attested.job_id} is not open")
    if (request.worker, request.worker_key_id) != (instance, key.pk):
        raise RefusedError(f"rerun #{request.pk} runs on {request.worker}, not on {instance} ({key.name})")
    if request.hardware != attested.hardware_class:
        raise RefusedError(f"rerun #{request.pk} is for class {request.hardware}, not {attested.hardware_class}")
    named = (attested.predicate.request, attested.predicate.run, attested.run_digest)
    if named != (request.pk, request.run.run_id, request.run_digest):
        raise RefusedError(f"the attestation names rerun #{named[0]} of run {named[1]} ({named[2]}), not #{request.pk}")
    spec = (document_value(request.run_digest) or {}).get("spec") or {}
    ran = (attested.predicate.workloadDigest, attested.predicate.implementationDigest)
    if ran != (spec.get("workloadDigest"), spec.get("implementationDigest")):
        raise RefusedError(f"the attestation is of another definition or solution than rerun #{request.pk}'s run")
    if attested.predicate.harnessOptions != request.harness_options:
        # A job rewritten on the broker no longer verifies at the worker; this is the site's own check, that the
        # evaluation it records is the one it asked for (precision, budget, limits, protocol, device).
        raise RefusedError(
            f"the attestation ran with options {attested.predicate.harnessOptions}, not rerun #{request.pk}'s "
            f"{request.harness_options}"
        )
    if attested.result is not None and not reruns.signs_result_run(
        attested, reruns.result_run_manifest(request, attested.result, attested.predicate.finishedAt)
    ):
        raise RefusedError(f"the attestation does not sign the result run rerun #{request.pk} would store")
