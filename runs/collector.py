"""The collector: the one place a worker's word enters the index, and the only code that writes a verdict.

A worker holds no database (harness/worker.py). What it sends on the results queue (runs.tasks
collects it) or to POST /api/v1/attestations is a DSSE envelope; it is verified here against the
registered, unrevoked key of the worker it names, for the hardware class it names, and matched with
a request that is running that very job before anything is written. Every refusal is one log line
and writes nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from records.attestation import (
    MESSAGE_PAYLOAD_TYPE,
    AttestationError,
    Attested,
    envelope_keyid,
    read_statement,
    verify_envelope,
)
from runs import reruns
from runs.models import RerunAttempt, RerunRequest, WorkerKey

logger = logging.getLogger(__name__)


class MessageRefusedError(Exception):
    """A message the collector will not act on; the message says why."""


def collect(envelope: Any) -> str | None:
    """Act on a worker's envelope; None when it was accepted, else the reason it was refused (logged)."""
    try:
        key, signed = _verified(envelope)
        if signed.payload_type == MESSAGE_PAYLOAD_TYPE:
            _worker_message(key, signed.body)
        else:
            record_attestation(key, read_statement(signed), envelope)
    except (MessageRefusedError, AttestationError) as refusal:
        logger.warning("worker message refused: %s", refusal)
        return str(refusal)
    return None


def _verified(envelope: Any) -> tuple[WorkerKey, Any]:
    if not isinstance(envelope, dict):
        raise MessageRefusedError("not a DSSE envelope")
    keyid = envelope_keyid(envelope)
    key = WorkerKey.objects.filter(key_id=keyid).first()
    if key is None:
        raise MessageRefusedError(f"signed by an unknown key {keyid}")
    signed = verify_envelope(envelope, key.public_key)
    if key.revoked_at is not None:
        raise MessageRefusedError(f"signed by worker {key.name}'s key, revoked at {key.revoked_at:%Y-%m-%d %H:%M:%S}")
    if signed.body.get("worker") != key.name and (signed.body.get("predicate") or {}).get("worker") != key.name:
        raise MessageRefusedError(f"signed by worker {key.name}'s key, but names another worker")
    return key, signed


def _worker_message(key: WorkerKey, body: dict[str, Any]) -> None:
    """A worker's own signed message: it took a job, it is alive (on a job, or none), it stops."""
    kind, instance = body.get("type"), str(body.get("instance") or "")
    classes = [str(name) for name in body.get("classes") or []]
    if not instance or any(name not in key.classes for name in classes):
        raise MessageRefusedError(f"worker {key.name} names classes {classes} it is not registered for, or no instance")
    if kind == "started":
        job = str(body.get("job") or "")
        request = RerunRequest.objects.filter(job_id=job).first()
        if request is None or request.hardware not in key.classes:
            raise MessageRefusedError(f"worker {key.name} took job {job!r}, which is no job for its classes")
        if reruns.claim_job(job, instance) is None:
            raise MessageRefusedError(f"worker {instance} took job {job}, which is not queued (taken, or over)")
    elif kind == "beat":
        reruns.beat_worker(instance, classes)
        if body.get("job"):
            reruns.beat_job(str(body["job"]), instance)
    elif kind == "stopped":
        reruns.forget_worker(instance)
    else:
        raise MessageRefusedError(f"a worker message of unknown type {kind!r}")


def record_attestation(key: WorkerKey, attested: Attested, envelope: dict[str, Any]) -> RerunRequest:
    """Check an attestation against the request it answers, then record its result and verdict."""
    if attested.hardware_class not in key.classes:
        raise MessageRefusedError(f"worker {key.name} is not registered for class {attested.hardware_class!r}")
    if RerunAttempt.objects.filter(job_id=attested.job_id).exists():
        raise MessageRefusedError(f"job {attested.job_id} was attested already: a replay")
    with transaction.atomic():
        request = RerunRequest.objects.select_for_update().filter(job_id=attested.job_id).first()
        if request is None or not attested.job_id:
            raise MessageRefusedError(f"job {attested.job_id!r} is no request's current job")
        if request.state != RerunRequest.State.RUNNING:
            raise MessageRefusedError(f"rerun #{request.pk} is {request.state}, not running")
        if request.worker != attested.predicate.get("instance"):
            raise MessageRefusedError(
                f"rerun #{request.pk} runs on {request.worker}, not on {attested.predicate.get('instance')}"
            )
        if request.hardware != attested.hardware_class:
            raise MessageRefusedError(
                f"rerun #{request.pk} is for class {request.hardware}, not {attested.hardware_class}"
            )
        if request.run_digest != attested.run_digest or attested.predicate.get("request") != request.pk:
            raise MessageRefusedError(f"the attestation is for another run or request than rerun #{request.pk}")
        outcome = reruns.HarnessOutcome(
            attested.result,
            str(attested.predicate.get("logTail") or ""),
            float(attested.predicate.get("harnessSeconds") or 0),
        )
        if attested.result is None:
            reruns.record_failure(request, request.attempts, "HARNESS_ERROR", "the harness produced no result", outcome)
            RerunRequest.objects.filter(pk=request.pk).update(attestation=envelope)
            return request
        reruns.record_result(
            request,
            request.attempts,
            attested.result,
            outcome,
            attested.confirmation,
            attestation=envelope,
            worker=key.name,
        )
    return request
