"""Writes: public submissions, and the moderators' decisions on them.

Nothing here touches a Run: attestations and reports are shown and counted,
never fed back into a run's evidence level or rank.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.utils import timezone

from attestations.forms import NoteForm, ReportForm
from attestations.models import Attestation, IssueReport
from runs.models import Run
from web.cache import bump_generation_on_commit


def submit_attestation(run: Run, form: NoteForm) -> Attestation:
    """A new attestation waits for a moderator, whatever the form said."""
    attestation = form.save(commit=False)
    attestation.run = run
    attestation.status = Attestation.Status.PENDING
    attestation.save()
    return attestation


def submit_issue_report(run: Run, form: ReportForm) -> IssueReport:
    report = form.save(commit=False)
    report.run = run
    report.status = IssueReport.Status.OPEN
    report.save()
    return report


def moderate_attestations(attestations: QuerySet[Attestation], status: str, moderator: User) -> int:
    """Approve or reject; rows already in that state keep who decided and when."""
    changed = attestations.exclude(status=status)
    count = changed.update(status=status, moderated_at=timezone.now(), moderated_by=moderator)
    if count:
        bump_generation_on_commit()  # an approved note appears on its run page, a rejected one disappears
    return count


def set_report_status(reports: QuerySet[IssueReport], status: str, moderator: User) -> int:
    changed = reports.exclude(status=status)
    return changed.update(status=status, moderated_at=timezone.now(), moderated_by=moderator)
