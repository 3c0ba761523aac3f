"""Reruns answered as a rerun worker answers them, in the test's process: a registered key, the messages it
signs (harness.worker) and the collector that takes them (verification.collector), without a broker."""

from __future__ import annotations

import hashlib
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.utils import timezone

from harness.parent.worker import WorkerState, worker_message
from records.attestation import (
    STATEMENT_PAYLOAD_TYPE,
    WorkerIdentity,
    key_id,
    public_key_text,
    rerun_statement,
    sign_envelope,
)
from records.canonical import digest
from verification.collector import collect
from verification.models import RerunRequest, WorkerKey
from verification.reruns import requested_documents, rerun_job, result_run_manifest
from verification.worker_keys import site_public_key

INSTANCE = "tests:1"
WORKER = "tests-worker"


def worker_identity(name: str = WORKER, classes: tuple[str, ...] = ("cpu", "nvidia-h100")) -> WorkerIdentity:
    """A worker registered in this test's database (on first use), with the key it signs with: the same key
    for the same name in every test, so that nothing needs keeping between calls."""
    key = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(f"tests {name}".encode()).digest())
    public = public_key_text(key.public_key())
    WorkerKey.objects.get_or_create(
        key_id=key_id(public),
        defaults={"name": name, "hardware": ",".join(classes), "public_key": public, "created_at": timezone.now()},
    )
    return WorkerIdentity(name, classes, key)


def claim(request: RerunRequest, identity: WorkerIdentity | None = None, instance: str = INSTANCE) -> RerunRequest:
    """The worker says it took the request's job."""
    identity = identity or worker_identity()
    refusal = collect(worker_message(identity, "started", instance, job=request.job_id, classes=[request.hardware]))
    assert refusal is None, refusal
    request.refresh_from_db()
    return request


def predicate(request: RerunRequest, result: dict[str, Any] | None, identity: WorkerIdentity) -> dict[str, Any]:
    """What a worker attests for the request's current job with this harness result."""
    documents = requested_documents(request)
    return {
        "jobId": request.job_id,
        "request": request.pk,
        "run": request.run.run_id,
        "worker": identity.name,
        "hardwareClass": request.hardware,
        "workloadDigest": digest(documents.workload),
        "implementationDigest": digest(documents.implementation),
        "harnessOptions": request.harness_options,
        "result": result,
        "startedAt": "2026-08-24T10:00:00Z",
        "finishedAt": "2026-08-24T10:00:01Z",
        "harnessSeconds": 0.5,
    }


def attestation(request: RerunRequest, values: dict[str, Any], identity: WorkerIdentity) -> dict[str, Any]:
    """The worker's signed statement of these values, naming the result run it made, as harness.worker does."""
    result = values.get("result")
    result_run = None if result is None else digest(result_run_manifest(request, result, values["finishedAt"])["run"])
    statement = rerun_statement(run_digest=request.run_digest, predicate=values, result_run_digest=result_run)
    return sign_envelope(STATEMENT_PAYLOAD_TYPE, statement, identity.key)


def result_message(
    identity: WorkerIdentity, envelope: dict[str, Any], job: str, *, instance: str = INSTANCE, log_tail: str = ""
) -> dict[str, Any]:
    return worker_message(identity, "result", instance, job=job, attestation=envelope, logTail=log_tail)


def attest(
    request: RerunRequest,
    result: dict[str, Any] | None,
    *,
    identity: WorkerIdentity | None = None,
    log_tail: str = "",
) -> RerunRequest:
    """The claimed request's worker sends this harness result, signed; the collector must take it."""
    identity = identity or worker_identity()
    envelope = attestation(request, predicate(request, result, identity), identity)
    refusal = collect(result_message(identity, envelope, request.job_id, log_tail=log_tail))
    assert refusal is None, refusal
    request.refresh_from_db()
    return request


def finish(request: RerunRequest, result: dict[str, Any] | None, *, log_tail: str = "") -> RerunRequest:
    """One attempt of the request, as a worker makes it: it takes the job, and attests this harness result."""
    return attest(claim(request), result, log_tail=log_tail)


def rerun_here(request: RerunRequest, *, unsandboxed: bool = False) -> RerunRequest:
    """A whole rerun in this process as a worker makes it: its job, the real harness, the signed messages."""
    sent: list[dict[str, Any]] = []

    def send(message: dict[str, Any]) -> bool:
        sent.append(message)
        return True

    request.refresh_from_db()
    state = WorkerState(worker_identity(), site_public_key(), request.hardware, INSTANCE, unsandboxed, 60.0, send)
    state.run(rerun_job(request))
    for message in sent:
        assert collect(message) is None
    request.refresh_from_db()
    return request
