"""python manage.py verify_attestations: check every stored rerun attestation against the published keys."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from records.attestation import AttestationError, Attested, key_set, verify_with_key_set
from runs.models import RerunAttestation, WorkerKey
from runs.serializers import worker_key_json


class Command(BaseCommand):
    help = (
        "Verify every stored rerun attestation as anyone can offline (python -m records.attestation verify): "
        "its signature against the published worker keys, its worker and class, and the run and job it names."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        keys = key_set([worker_key_json(key) for key in WorkerKey.objects.all()])
        failed = checked = 0
        stored = RerunAttestation.objects.select_related("request__run", "request__result_run").order_by("pk")
        for attestation in stored.iterator():
            checked += 1
            try:
                # Taken in before a revocation, an attestation stands; signed with a key revoked before, it does not.
                attested, _ = verify_with_key_set(attestation.envelope, keys, recorded_at=attestation.received_at)
                _names_its_rerun(attestation, attested)
            except AttestationError as error:
                failed += 1
                self.stdout.write(
                    f"rerun #{attestation.request_id} attempt {attestation.attempt}: NOT verified: {error}"
                )
        self.stdout.write(f"{checked - failed} of {checked} attestation(s) verified")
        if failed:
            raise CommandError(f"{failed} attestation(s) did not verify")


def _names_its_rerun(attestation: RerunAttestation, attested: Attested) -> None:
    request = attestation.request
    if attested.job_id != attestation.job_id or attested.run_digest != request.run_digest:
        raise AttestationError(f"it names job {attested.job_id} of {attested.run_digest}, not this rerun's")
    if attested.predicate.run != request.run.run_id or attested.hardware_class != request.hardware:
        raise AttestationError(f"it names run {attested.predicate.run} on {attested.hardware_class}, not this rerun's")
    result = request.result_run
    if (
        request.attestation_id == attestation.pk
        and result is not None
        and not result.external_id.startswith(f"rerun/{request.run.run_id}/")
    ):
        raise AttestationError(f"its result run {result.run_id} is not a result of run {request.run.run_id}")
