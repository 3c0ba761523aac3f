"""The collector: a worker's signed word is taken only as the registry and the request it answers allow.

Each refusal below is one log line, and writes nothing: no attestation, no result run, no verdict, no
evidence change, no line in the run's history, and the request as it was.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.utils import timezone

from harness.parent.worker import worker_message
from records.attestation import STATEMENT_PAYLOAD_TYPE, rerun_statement, sign_envelope, verified_statement
from runs.models import Document, Run
from tests.results import harness_result
from tests.runs import attested
from tests.runs.attested import INSTANCE, attestation, claim, predicate, result_message, worker_identity
from verification.collector import collect
from verification.models import EvidenceChange, RerunAttestation, RerunRequest, RerunWorker, WorkerKey
from verification.reruns import request_rerun
from verification.worker_keys import revoke_worker_key

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("memory_broker")]


def written() -> tuple[Any, ...]:
    """Everything a taken result writes."""
    return (
        RerunAttestation.objects.count(),
        Run.objects.count(),
        EvidenceChange.objects.count(),
        LogEntry.objects.count(),
        sorted(RerunRequest.objects.values_list("pk", "state", "attempts", "verdict", "result_run", "job_id")),
        sorted(Run.objects.values_list("run_id", "evidence")),
    )


@pytest.fixture
def refused(caplog: pytest.LogCaptureFixture) -> Callable[[dict[str, Any], str], None]:
    """Send a message to the collector: it must be refused for `why`, in one log line, writing nothing."""

    def send(message: dict[str, Any], why: str) -> None:
        before = written()
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="verification.collector"):
            refusal = collect(message)
        assert refusal is not None and why in refusal, refusal
        lines = [record for record in caplog.records if record.name == "verification.collector"]
        assert [record.getMessage() for record in lines] == [f"worker message refused: {refusal}"]
        assert written() == before

    return send


@pytest.fixture
def running(demo: Callable[[str], Run]) -> RerunRequest:
    """The too-fast demo run's rerun, claimed by the tests' worker."""
    return claim(request_rerun(demo("rmsnorm-row-loop"), user=None))


def passing(request: RerunRequest) -> dict[str, Any]:
    """A result that would reproduce the run's claim: what a forger would want recorded."""
    return harness_result(median=request.run.latency_ns or 1.0)


def test_a_signed_result_is_recorded_with_its_attestation(running: RerunRequest) -> None:
    request = attested.attest(running, passing(running), log_tail="log for moderators")
    assert request.state == "succeeded" and request.result_run is not None
    assert request.attestation is not None and request.attestation.job_id == running.job_id
    assert (request.log_tail, request.attestation.worker_key.name) == ("log for moderators", attested.WORKER)


def test_a_forged_signature_is_refused(running: RerunRequest, refused: Callable[..., None]) -> None:
    identity = worker_identity()
    envelope = attestation(running, predicate(running, passing(running), identity), identity)
    signature = bytearray(base64.b64decode(envelope["signatures"][0]["sig"]))
    signature[0] ^= 1
    envelope["signatures"][0]["sig"] = base64.b64encode(bytes(signature)).decode()
    refused(result_message(identity, envelope, running.job_id), "the signature does not verify")
    # The message around it, forged the same way.
    genuine = attestation(running, predicate(running, passing(running), identity), identity)
    message = result_message(identity, genuine, running.job_id)
    message["signatures"][0]["sig"] = envelope["signatures"][0]["sig"]
    refused(message, "the signature does not verify")


def test_a_tampered_predicate_is_refused(running: RerunRequest, refused: Callable[..., None]) -> None:
    identity = worker_identity()
    envelope = attestation(running, predicate(running, harness_result(median=1e12), identity), identity)
    # The figures changed after the worker signed them.
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["result"] = passing(running)
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    refused(result_message(identity, envelope, running.job_id), "the signature does not verify")
    # Signed by the worker, but its result is not the result its subject names.
    statement["subject"][1]["digest"]["sha256"] = "0" * 64
    signed = sign_envelope(STATEMENT_PAYLOAD_TYPE, statement, identity.key)
    refused(result_message(identity, signed, running.job_id), "is not the result its subject names")


def test_an_unknown_key_is_refused(running: RerunRequest, refused: Callable[..., None]) -> None:
    stranger = worker_identity("stranger")
    WorkerKey.objects.filter(name="stranger").delete()  # signed, but registered nowhere here
    envelope = attestation(running, predicate(running, passing(running), stranger), stranger)
    refused(result_message(stranger, envelope, running.job_id), "which no worker is registered with here")
    refused(worker_message(stranger, "beat", "stranger@host", classes=["cpu"]), "no worker is registered with")


def test_a_revoked_key_is_refused(running: RerunRequest, refused: Callable[..., None]) -> None:
    identity = worker_identity()
    assert revoke_worker_key(identity.name)
    envelope = attestation(running, predicate(running, passing(running), identity), identity)
    refused(result_message(identity, envelope, running.job_id), "revoked at")


def test_a_cpu_worker_cannot_attest_for_another_class(demo: Callable[[str], Run], refused: Callable[..., None]) -> None:
    cpu = worker_identity("cpu-only", classes=("cpu",))
    request = request_rerun(demo("rmsnorm-row-loop"), user=None, hardware="nvidia-h100")
    # It cannot take the job...
    refused(worker_message(cpu, "started", "cpu-only@host", job=request.job_id, classes=["cpu"]), "no queued job")
    # ...nor answer it once another worker took it...
    request = claim(request)
    values = predicate(request, passing(request), cpu) | {"hardwareClass": "nvidia-h100"}
    refused(result_message(cpu, attestation(request, values, cpu), request.job_id), "not registered for class")
    # ...nor beat for it.
    refused(worker_message(cpu, "beat", "cpu-only@host", classes=["nvidia-h100"]), "not its classes")
    assert not RerunWorker.objects.exists()


def test_an_attestation_replayed_for_another_job_or_run_is_refused(
    running: RerunRequest, demo: Callable[[str], Run], refused: Callable[..., None], settings: Any
) -> None:
    settings.RERUN_MAX_ATTEMPTS = 2
    identity = worker_identity()
    noisy = harness_result(median=running.run.latency_ns * 1.15, interval=(1.0, 1e12))
    first = attestation(running, predicate(running, noisy, identity), identity)
    assert collect(result_message(identity, first, running.job_id)) is None
    running.refresh_from_db()
    assert running.state == "queued"  # inconclusive: a new attempt, a new job
    again = claim(running)
    # The first attempt's attestation, sent for the second attempt's job, or as it was.
    refused(result_message(identity, first, again.job_id), "an attestation of")
    old_job = json.loads(base64.b64decode(first["payload"]))["predicate"]["jobId"]
    assert old_job != again.job_id
    refused(result_message(identity, first, old_job), "a replay")
    # An attestation of this rerun's job, sent as another run's rerun.
    other = claim(request_rerun(demo("rmsnorm-vectorised"), user=None))
    values = predicate(again, passing(again), identity) | {"jobId": other.job_id}
    refused(result_message(identity, attestation(again, values, identity), other.job_id), "not #")


def test_a_result_for_a_request_not_running_is_refused(
    demo: Callable[[str], Run], refused: Callable[..., None]
) -> None:
    identity = worker_identity()
    queued = request_rerun(demo("rmsnorm-row-loop"), user=None)
    envelope = attestation(queued, predicate(queued, passing(queued), identity), identity)
    refused(result_message(identity, envelope, queued.job_id), "is queued, not running")
    finished = attested.finish(queued, harness_result(median=1e12))
    assert finished.state == "succeeded"
    RerunAttestation.objects.filter(request=finished).delete()  # not even a replay: the request is over
    RerunRequest.objects.filter(pk=finished.pk).update(attestation=None)
    refused(result_message(identity, envelope, queued.job_id), "is succeeded, not running")


def test_a_result_from_another_process_than_the_one_that_took_the_job_is_refused(
    running: RerunRequest, refused: Callable[..., None]
) -> None:
    identity = worker_identity()
    envelope = attestation(running, predicate(running, passing(running), identity), identity)
    refused(result_message(identity, envelope, running.job_id, instance="other@host"), f"runs on {INSTANCE}")


def test_a_stale_beat_is_refused_and_a_fresh_one_keeps_the_job_alive(
    running: RerunRequest, refused: Callable[..., None]
) -> None:
    identity = worker_identity()
    stale = worker_message(identity, "beat", INSTANCE, classes=["cpu"], job=running.job_id)
    payload = json.loads(base64.b64decode(stale["payload"]))
    payload["at"] = "2020-01-01T00:00:00Z"
    refused(sign_envelope(stale["payloadType"], payload, identity.key), "is stale")
    RerunRequest.objects.filter(pk=running.pk).update(heartbeat_at=timezone.now() - timezone.timedelta(minutes=5))
    assert collect(stale) is None
    running.refresh_from_db()
    assert running.heartbeat_at is not None and timezone.now() - running.heartbeat_at < timezone.timedelta(seconds=5)


def test_what_is_not_a_message_is_refused(refused: Callable[..., None]) -> None:
    refused({"payload": "x"}, "not a DSSE envelope")
    refused([], "not a DSSE envelope")
    identity = worker_identity()
    statement = sign_envelope(STATEMENT_PAYLOAD_TYPE, {"type": "beat"}, identity.key)
    refused(statement, "not a worker's message")
    message_type = worker_message(identity, "beat", INSTANCE)["payloadType"]
    refused(sign_envelope(message_type, {"type": "x"}, identity.key), "no worker's message")


@pytest.mark.parametrize(
    "options",
    [
        {"precision": 0.9},  # the interval a rewritten job asked for: 6 pairs a case instead of 25
        {"case-budget": 0.2},
        {"timeout": 5, "memory-mb": 64},
        {"protocol": "sol-execbench"},
    ],
)
def test_a_result_of_other_harness_options_than_the_request_is_refused(
    running: RerunRequest, refused: Callable[..., None], options: dict[str, Any]
) -> None:
    identity = worker_identity()
    values = predicate(running, passing(running), identity)
    values["harnessOptions"] = running.harness_options | options
    refused(result_message(identity, attestation(running, values, identity), running.job_id), "ran with options")


def test_the_requests_options_are_fixed_when_it_is_asked_for_and_a_later_setting_changes_nothing(
    demo: Callable[[str], Run], settings: Any
) -> None:
    request = request_rerun(demo("rmsnorm-row-loop"), user=None)
    asked = dict(request.harness_options)
    assert asked["precision"] > 0 and asked["case-budget"] == settings.RERUN_CASE_BUDGET_SECONDS
    settings.RERUN_CASE_BUDGET_SECONDS = 0.2
    running = claim(request)
    assert attested.attest(running, passing(running)).state == "succeeded"
    assert RerunRequest.objects.get(pk=request.pk).harness_options == asked


def test_a_result_whose_signature_does_not_cover_the_run_stored_for_it_is_refused(
    running: RerunRequest, refused: Callable[..., None]
) -> None:
    identity = worker_identity()
    values = predicate(running, passing(running), identity)
    # Signed without the result run (as a worker before result runs were signed), and with another one.
    unsigned = sign_envelope(
        STATEMENT_PAYLOAD_TYPE, rerun_statement(run_digest=running.run_digest, predicate=values), identity.key
    )
    refused(result_message(identity, unsigned, running.job_id), "does not sign the result run")
    other = rerun_statement(run_digest=running.run_digest, predicate=values, result_run_digest="sha256:" + "e" * 64)
    refused(
        result_message(identity, sign_envelope(STATEMENT_PAYLOAD_TYPE, other, identity.key), running.job_id),
        "does not sign the result run",
    )


def test_the_result_run_stored_is_the_one_the_worker_signed_with_its_own_observed_time(
    running: RerunRequest,
) -> None:
    request = attested.attest(running, passing(running))
    assert request.result_run is not None and request.attestation is not None
    signed = verified_statement(request.attestation.envelope, request.attestation.worker_key.public_key)
    assert signed.result_run_digest == request.result_run.digest
    stored = json.loads(Document.objects.get(digest=request.result_run.digest).canonical)
    assert stored["spec"]["observedAt"] == signed.predicate.finishedAt
