"""Writes: public submissions, and the moderators' decisions on them.

Nothing here touches a Run: attestations and reports are shown and counted,
never fed back into a run's evidence level or rank.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.dispatch import Signal
from django.utils import timezone

from attestations.forms import NoteForm, ReportForm
from attestations.models import Attestation, IssueReport, count_notes
from runs.models import Run
from web.scopes import NOTE_MODERATED, NOTE_SUBMITTED, REPORT

# Sent once a new report has committed (report_id=its key): the verification app may answer it with a rerun at once
# (verification/disputes.py). attestations imports nothing of who listens.
report_filed = Signal()


def submit_attestation(run: Run, form: NoteForm) -> Attestation:
    """A new attestation waits for a moderator, whatever the form said."""
    attestation = form.save(commit=False)
    attestation.run = run
    attestation.status = Attestation.Status.PENDING
    attestation.save()
    NOTE_SUBMITTED.retire_on_commit(run)  # declared: it retires nothing, no page shows a pending note
    return attestation


def submit_issue_report(run: Run, form: ReportForm) -> IssueReport:
    report = form.save(commit=False)
    report.run = run
    report.status = IssueReport.Status.OPEN
    report.save()
    REPORT.retire_on_commit(run)
    transaction.on_commit(partial(report_filed.send, sender=IssueReport, report_id=report.pk))
    return report


@transaction.atomic
def moderate_attestations(attestations: QuerySet[Attestation], status: str, moderator: User) -> int:
    """Approve or reject; rows already in that state keep who decided and when. Each change is logged."""
    run_ids = set(attestations.values_list("run_id", flat=True))
    changed = _decide(attestations, status, moderator, f"Status set to {status} (moderation action).")
    if changed:
        count_notes(run_ids)  # the run page reads its notes only where the run has some
        NOTE_MODERATED.retire_on_commit(*Run.objects.filter(pk__in=run_ids).only("run_id"))
    return changed


@transaction.atomic
def set_report_status(reports: QuerySet[IssueReport], status: str, moderator: User) -> int:
    run_ids = set(reports.values_list("run_id", flat=True))
    changed = _decide(reports, status, moderator, f"Status set to {status} (moderation action).")
    if changed:
        REPORT.retire_on_commit(*Run.objects.filter(pk__in=run_ids).only("run_id"))
    return changed


def _decide(rows: QuerySet[Any], status: str, moderator: User, message: str) -> int:
    """Set the status of the rows not already in it, and log each in the admin's history, who and when.

    The rows are locked first, so two moderators deciding at once log each change once.
    """
    pks = list(rows.exclude(status=status).select_for_update().values_list("pk", flat=True))
    changed = rows.model.objects.filter(pk__in=pks)
    changed.update(status=status, moderated_at=timezone.now(), moderated_by=moderator)
    LogEntry.objects.log_actions(
        user_id=moderator.pk, queryset=changed.select_related("run"), action_flag=CHANGE, change_message=message
    )
    return len(pks)
