"""Writes to runs other than imports (see runs/ingest.py)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import transaction
from django.utils import timezone

from runs.figures import refresh_group_figures
from runs.models import Run, RunStatusChange
from web.scopes import WITHDRAWAL

Moderator = AbstractBaseUser | AnonymousUser | None


@transaction.atomic
def withdraw_run(run: Run, reason: str, by: Moderator = None) -> None:
    """Take a run out of every ranking; its record, manifest and digest stay as a tombstone.

    The run's history keeps each withdrawal (and each change of its reason); saving an unchanged one adds none.
    """
    if not reason.strip():
        raise ValueError("a withdrawal needs a reason")
    # As stored, not as the instance says: the admin's form has set the new reason on it already.
    stored = Run.objects.filter(pk=run.pk).values_list("withdrawn_at", "withdrawn_reason").first()
    if stored is None or stored[0] is None or stored[1] != reason.strip():
        record_status_change(run, RunStatusChange.Action.WITHDRAWN, reason.strip(), by)
    run.withdrawn_at = run.withdrawn_at or timezone.now()
    run.withdrawn_reason = reason.strip()
    run.source_rank = None
    run.save(update_fields=["withdrawn_at", "withdrawn_reason", "source_rank", "updated_at"])
    refresh_group_figures([run.group_id])
    WITHDRAWAL.retire_on_commit(run)


@transaction.atomic
def restore_run(run: Run, by: Moderator = None) -> None:
    from runs.ingest import refresh_source_ranks

    if Run.objects.filter(pk=run.pk).exclude(withdrawn_at=None).exists():
        record_status_change(run, RunStatusChange.Action.RESTORED, "", by)
    run.withdrawn_at = None
    run.withdrawn_reason = ""
    run.save(update_fields=["withdrawn_at", "withdrawn_reason", "updated_at"])
    if run.definition_id:
        refresh_source_ranks({run.definition_id})
    refresh_group_figures([run.group_id])
    WITHDRAWAL.retire_on_commit(run)


def record_status_change(run: Run, action: str, reason: str, by: Moderator) -> RunStatusChange:
    """One line of the run's public history; `by` is kept for moderators only."""
    # The project's user model is Django's own; an anonymous or absent moderator is recorded as no one.
    by_user = by if isinstance(by, User) else None
    return RunStatusChange.objects.create(run=run, action=action, reason=reason, at=timezone.now(), by=by_user)
