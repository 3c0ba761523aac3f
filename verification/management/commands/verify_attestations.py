"""python manage.py verify_attestations [--trust-workers KEYSET]: check every stored rerun attestation against the
keys this site trusts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from records.attestation import AttestationError, Attested, PublishedKey, read_envelope, verify_with_key_set
from runs.dump_sections import trusted_keys
from runs.management.commands.import_runs import pinned_keys
from verification.models import RerunAttestation


class Command(BaseCommand):
    help = (
        "Verify every stored rerun attestation as anyone can offline (python -m records.attestation verify): "
        "its signature against the keys this site trusts (its own registry, and the key sets given with "
        "--trust-workers), its worker and class, and the run and job it names. A key kept from a dump's own "
        "key list verifies nothing: it is only what the dump said."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--trust-workers",
            dest="trust_workers",
            action="append",
            type=Path,
            default=[],
            metavar="KEYSET",
            help="also trust these worker keys (a key set as /api/v1/workers serves it, or a dump's "
            "workers.jsonl(.gz)): the keys you pinned for a dump's publisher when you imported it (repeatable)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        keys = trusted_keys(pinned_keys(options["trust_workers"])).key_set()
        failures: Counter[str] = Counter()
        checked = 0
        stored = RerunAttestation.objects.select_related("request__run", "request__result_run", "worker_key")
        for attestation in stored.order_by("pk").iterator():
            checked += 1
            try:
                # Taken in before a revocation, an attestation stands; signed with a key revoked before, it does not.
                attested, _ = verify_with_key_set(attestation.envelope, keys, recorded_at=attestation.received_at)
                _names_its_rerun(attestation, attested)
            except AttestationError as error:
                failures[_why(attestation, error, keys)] += 1
                self.stdout.write(
                    f"rerun #{attestation.request_id} attempt {attestation.attempt}: NOT verified: {error}"
                )
        self.stdout.write(summary(checked, failures))
        if failures:
            raise CommandError(f"{failures.total()} attestation(s) did not verify")


def summary(checked: int, failures: Counter[str]) -> str:
    """How many verified, how many did not, and why, the commonest reason first."""
    said = f"{checked - failures.total()} of {checked} attestation(s) verified"
    if not failures:
        return said
    return f"{said}; {failures.total()} did not: " + "; ".join(f"{n} {why}" for why, n in failures.most_common())


def _why(attestation: RerunAttestation, error: AttestationError, keys: dict[str, PublishedKey]) -> str:
    """A failure's reason as the summary counts it: an untrusted key by where the key came from."""
    try:
        keyid = read_envelope(attestation.envelope).signatures[0].keyid
    except AttestationError:
        return str(error)
    if keyid in keys:
        return str(error)
    return f"signed by a key this site does not trust ({attestation.worker_key.provenance}; not pinned)"


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
