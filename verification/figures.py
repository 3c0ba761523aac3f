"""The run's counters of verification's rows, kept at write time (runs/figures.py keeps the others)."""

from __future__ import annotations

from collections.abc import Iterable

from runs.figures import count_per_run
from runs.models import Run
from verification.models import EvidenceChange, RerunRequest


def refresh_run_counters(run_ids: Iterable[int]) -> None:
    """Recount what the run page lists for these runs from verification's rows: reruns and evidence changes.

    Its approved notes (note_count) are attestations' rows, counted there (attestations.models.count_notes):
    attestations depends on runs, never the other way round, as verification does.
    """
    ids = sorted(set(run_ids))
    if not ids:
        return
    Run.objects.filter(pk__in=ids).update(
        rerun_count=count_per_run(RerunRequest.objects.all()),
        evidence_change_count=count_per_run(EvidenceChange.objects.all()),
    )
