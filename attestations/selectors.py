"""Reads for the run page's "Replications and notes" and "Report an issue" sections."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from attestations.models import Attestation, IssueReport
from runs.models import Run


def approved_attestations(run: Run) -> list[Attestation]:
    """What the public may see about a run, newest first, in one query."""
    # The contact email is for moderators; not loading it keeps it out of every public page by construction.
    approved = Attestation.objects.approved().filter(run=run).defer("contact_email")
    return list(approved.order_by("-created_at", "-id"))


def public_issue_reports(run: Run) -> list[IssueReport]:
    """The run's issue reports as the public sees them: what kind, when, where moderation stands, and the outcome
    of a report answered by a rerun (a dispute).

    Only those fields are loaded: the report's text and the reporter's contact stay with the moderators.
    """
    public = ("category", "status", "created_at", "run_id", "escalated_at", "dispute_outcome", "dispute_closed_at")
    reports = IssueReport.objects.filter(run=run).only(*public)
    return list(reports.order_by("-created_at", "-id"))


@dataclass(frozen=True)
class AttestationCounts:
    reproductions: int
    notes: int
    outcomes: dict[str, int]

    @property
    def summary(self) -> str:
        """'3 reproductions (2 reproduced, 1 not reproduced) · 1 note'; empty when there is nothing."""
        parts = []
        if self.reproductions:
            label = "reproduction" if self.reproductions == 1 else "reproductions"
            outcomes = [(value, name) for value, name in Attestation.Outcome.choices if self.outcomes.get(value)]
            detail = ", ".join(f"{self.outcomes[value]} {name}" for value, name in outcomes)
            parts.append(f"{self.reproductions} {label} ({detail})")
        if self.notes:
            parts.append(f"{self.notes} {'note' if self.notes == 1 else 'notes'}")
        return " · ".join(parts)


def count_attestations(attestations: Sequence[Attestation]) -> AttestationCounts:
    """Counts by kind and outcome, from the list already loaded: no query."""
    kinds = Counter(attestation.kind for attestation in attestations)
    outcomes = Counter(a.outcome for a in attestations if a.kind == Attestation.Kind.REPRODUCTION)
    return AttestationCounts(
        reproductions=kinds[Attestation.Kind.REPRODUCTION], notes=kinds[Attestation.Kind.NOTE], outcomes=dict(outcomes)
    )
