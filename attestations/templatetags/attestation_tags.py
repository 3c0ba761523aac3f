"""The run page's attestation sections read their rows here: runs' page code never imports attestations."""

from __future__ import annotations

from collections.abc import Sequence

from django import template

from attestations.models import Attestation, IssueReport
from attestations.selectors import approved_attestations, count_attestations, public_issue_reports
from runs.models import Run

register = template.Library()


@register.simple_tag
def run_notes(run: Run) -> list[Attestation]:
    """The run's approved notes, newest first; no query for a run that has none (Run.note_count)."""
    return approved_attestations(run) if run.note_count else []


@register.simple_tag
def run_issue_reports(run: Run) -> list[IssueReport]:
    """The run's issue reports as the public sees them: kind, date and status; no query for a run that has none
    (Run.issue_report_count)."""
    return public_issue_reports(run) if run.issue_report_count else []


@register.filter
def attestation_summary(attestations: Sequence[Attestation]) -> str:
    """'2 reproductions (1 reproduced, 1 not reproduced) · 1 note', from the list the page already has."""
    return count_attestations(attestations).summary


@register.filter
def disputes_among(reports: Sequence[IssueReport]) -> int:
    """How many of the reports the page already has are disputes (answered by a rerun): no query."""
    return sum(report.is_dispute for report in reports)
