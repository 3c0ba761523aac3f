"""Reads of the verification domain that its pages, the API and its commands share: a run's reruns as the pages
show them, the live workers, a run's evidence history. Every URL lookup goes through a *_or_404 helper."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.http import Http404
from django.utils import timezone

from records.rerun import may_be_rerun_result
from runs.models import Document, Run
from verification.models import EvidenceChange, RerunAttestation, RerunRequest, RerunWorker


def get_rerun_attestation_or_404(rerun_id: int) -> RerunAttestation:
    """The signed attestation a finished rerun's verdict stands on."""
    found = RerunAttestation.objects.filter(decided__pk=rerun_id).first()
    if found is None:
        raise Http404(f"No attested rerun {rerun_id}")
    return found


# -- reruns --------------------------------------------------------------------


@dataclass(frozen=True)
class RerunRow:
    """A rerun as the run page and its twin show it: the request, and what its result run measured."""

    request: RerunRequest
    result: dict[str, Any] | None
    reported_ns: float | None
    counts_for_evidence: bool
    # Whether its stored attestation verifies and signs the result run shown (None: a rerun with no attestation).
    attestation_verified: bool | None = None
    # A rerun of a version the run has since replaced: it checked figures the run no longer reports.
    of_earlier_version: bool = False

    @property
    def latency(self) -> dict[str, float]:
        return dict(((self.result or {}).get("timing") or {}).get("latencyNs") or {})

    @property
    def median_ns(self) -> float | None:
        return self.latency.get("median")

    @property
    def ratio(self) -> float | None:
        """The rerun's median over the reported figure: above 1, the rerun was slower."""
        if not self.median_ns or not self.reported_ns:
            return None
        return self.median_ns / self.reported_ns

    @property
    def cases(self) -> list[dict[str, Any]]:
        return list((self.result or {}).get("cases") or [])

    @property
    def hardware_product(self) -> str:
        run = self.request.result_run
        return run.hardware if run else ""


def rerun_rows(run: Run, own_class: str) -> list[RerunRow]:
    """Every rerun of a run, newest first, with its result run's document, in two queries (none for a run
    that counts no rerun: Run.rerun_count, kept by runs.figures)."""
    if not run.rerun_count:
        return []
    requests = list(
        run.rerun_requests.select_related("result_run", "attestation__worker_key")
        .defer("attestation__log_tail")
        .order_by("-requested_at", "-id")
    )
    digests = [r.result_run.digest for r in requests if r.result_run is not None]
    documents = Document.objects.in_bulk(digests)
    return [
        rerun_row(request, documents[request.result_run.digest].value if request.result_run else None, run, own_class)
        for request in requests
    ]


def rerun_row(request: RerunRequest, result_run: dict[str, Any] | None, run: Run, own_class: str) -> RerunRow:
    """A rerun as the pages and the API show it, its attestation verified again here, as on every read: one that
    no longer verifies counts for nothing, and its figures are shown only where they are the result run its
    worker signed."""
    attested = request.attestation.verified() if request.attestation else None
    shown_digest = request.result_run.digest if request.result_run else None
    verified = None if request.attestation is None else attested is not None and attested.shows(shown_digest)
    result = result_run["spec"] if result_run and verified is not False else None
    earlier = request.run_digest != run.digest
    counts = request.hardware == own_class and not earlier and (request.attestation is None or attested is not None)
    return RerunRow(request, result, run.reported_latency, counts, verified, earlier)


def live_hardware_classes() -> dict[str, int]:
    """The hardware classes with a live rerun worker (one that beat within RERUN_STALE_AFTER_SECONDS),
    and how many each has."""
    since = timezone.now() - timedelta(seconds=settings.RERUN_STALE_AFTER_SECONDS)
    live: dict[str, int] = {}
    for hardware in RerunWorker.objects.filter(seen_at__gte=since).values_list("hardware", flat=True):
        for name in hardware.split(","):
            if name:
                live[name] = live.get(name, 0) + 1
    return live


def evidence_history(run: Run) -> list[EvidenceChange]:
    if not run.evidence_change_count:  # kept by runs.figures: a run never changed asks for nothing
        return []
    return list(run.evidence_changes.select_related("rerun"))


def rerun_origin(result: Run) -> RerunRequest | None:
    """The rerun request whose result this run is (with the run it reran); None for every other run, which
    its id tells without a query."""
    if not may_be_rerun_result(result.source, result.external_id):
        return None
    return (
        RerunRequest.objects.select_related("run", "attestation__worker_key")
        .defer("attestation__envelope", "attestation__log_tail")
        .filter(result_run=result)
        .first()
    )
