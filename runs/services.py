"""Writes to runs other than imports (see runs/ingest.py)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from runs.models import Run
from web.cache import bump_generation_on_commit


@transaction.atomic
def withdraw_run(run: Run, reason: str) -> None:
    """Take a run out of every ranking; its record, manifest and digest stay as a tombstone."""
    if not reason.strip():
        raise ValueError("a withdrawal needs a reason")
    run.withdrawn_at = run.withdrawn_at or timezone.now()
    run.withdrawn_reason = reason.strip()
    run.source_rank = None
    run.save(update_fields=["withdrawn_at", "withdrawn_reason", "source_rank", "updated_at"])
    bump_generation_on_commit()


@transaction.atomic
def restore_run(run: Run) -> None:
    from runs.ingest import refresh_source_ranks

    run.withdrawn_at = None
    run.withdrawn_reason = ""
    run.save(update_fields=["withdrawn_at", "withdrawn_reason", "updated_at"])
    if run.definition_id:
        refresh_source_ranks({run.definition_id})
    bump_generation_on_commit()
