"""What the community says about a run: reproduction notes and issue reports.

Both are moderated before anyone else sees them, and neither ever touches the
run itself: a run's evidence level and rank change only through a
KernelIndex-controlled rerun.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from runs.figures import count_per_run
from runs.models import Run

BODY_MAX_LENGTH = 4000
PUBLIC_SUMMARY_MAX_LENGTH = 1000


class AttestationQuerySet(models.QuerySet["Attestation"]):
    def approved(self) -> AttestationQuerySet:
        return self.filter(status=Attestation.Status.APPROVED)

    def pending(self) -> AttestationQuerySet:
        return self.filter(status=Attestation.Status.PENDING)


class Attestation(models.Model):
    """A reproduction (with its outcome) or a plain note about a run."""

    # Labels stay lower case, as the pages use them mid-sentence.
    class Kind(models.TextChoices):
        REPRODUCTION = "reproduction", "reproduction"
        NOTE = "note", "note"

    class Outcome(models.TextChoices):
        REPRODUCED = "reproduced", "reproduced"
        NOT_REPRODUCED = "not_reproduced", "not reproduced"
        INCONCLUSIVE = "inconclusive", "inconclusive"

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        APPROVED = "approved", "approved"
        REJECTED = "rejected", "rejected"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="attestations")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, blank=True)
    measured_latency_ns = models.FloatField(null=True, blank=True)
    gpu = models.CharField("GPU", max_length=200, blank=True)
    body = models.TextField(max_length=BODY_MAX_LENGTH, blank=True)
    author_name = models.CharField("author display name", max_length=100, blank=True)
    contact_email = models.EmailField(blank=True, help_text="For moderators only; never shown publicly.")

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    moderated_at = models.DateTimeField(null=True, blank=True)
    moderated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = AttestationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["run", "status", "-created_at"], name="attestation_run_status"),
            models.Index(fields=["status", "-created_at"], name="attestation_queue"),
        ]
        constraints = [
            # A reproduction says how it came out; a note has no outcome to show.
            models.CheckConstraint(
                condition=Q(kind="reproduction", outcome__in=["reproduced", "not_reproduced", "inconclusive"])
                | Q(kind="note", outcome=""),
                name="attestation_outcome_matches_kind",
            ),
            models.CheckConstraint(
                condition=Q(measured_latency_ns__isnull=True) | Q(measured_latency_ns__gt=0),
                name="attestation_latency_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} on {self.run.run_id} ({self.get_status_display()})"


class DisputeOutcome(models.TextChoices):
    """How a dispute ended, as its rerun decided it (verification.disputes.outcome_of)."""

    UPHELD = "upheld", "upheld"
    REJECTED = "rejected", "rejected"
    UNDECIDED = "undecided", "undecided"


class IssueReportQuerySet(models.QuerySet["IssueReport"]):
    def disputes(self) -> IssueReportQuerySet:
        return self.filter(escalated_at__isnull=False)

    def open_disputes(self) -> IssueReportQuerySet:
        return self.disputes().filter(dispute_closed_at__isnull=True)

    def closed_disputes(self) -> IssueReportQuerySet:
        return self.disputes().filter(dispute_closed_at__isnull=False)


class IssueReport(models.Model):
    """A problem someone reports with a run; moderators triage it, the public never sees it."""

    class Category(models.TextChoices):
        WRONG_NUMBERS = "wrong_numbers", "wrong numbers"
        BROKEN_CORRECTNESS = "broken_correctness", "broken correctness"
        DUPLICATE = "duplicate", "duplicate"
        LICENSE = "license", "license"
        OTHER = "other", "other"

    class Status(models.TextChoices):
        OPEN = "open", "open"
        TRIAGED = "triaged", "triaged"
        RESOLVED = "resolved", "resolved"
        DISMISSED = "dismissed", "dismissed"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="issue_reports")
    category = models.CharField(max_length=32, choices=Category.choices)
    body = models.TextField(max_length=BODY_MAX_LENGTH)
    contact = models.CharField(max_length=254, blank=True, help_text="For moderators only; never shown publicly.")

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    resolution_note = models.TextField(blank=True, help_text="What the moderators found and did.")
    created_at = models.DateTimeField(auto_now_add=True)
    moderated_at = models.DateTimeField(null=True, blank=True)
    moderated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    # A dispute (verification/disputes.py): the report turned into a rerun, whose end decides it in public. The
    # rerun is named by string: attestations imports nothing of verification.
    rerun = models.ForeignKey(
        "verification.RerunRequest",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="disputes",
        editable=False,
    )
    escalated_at = models.DateTimeField("dispute opened", null=True, blank=True, editable=False)
    dispute_outcome = models.CharField(max_length=16, choices=DisputeOutcome.choices, blank=True, editable=False)
    dispute_closed_at = models.DateTimeField("dispute closed", null=True, blank=True, editable=False)
    public_summary = models.TextField(
        max_length=PUBLIC_SUMMARY_MAX_LENGTH,
        blank=True,
        help_text="Shown on /disputes beside the outcome; the report's own text and contact never are.",
    )

    objects = IssueReportQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "-created_at"], name="issue_report_queue"),
            models.Index(fields=["-escalated_at", "-id"], name="issue_report_disputes"),
        ]

    def __str__(self) -> str:
        return f"{self.get_category_display()} on {self.run.run_id} ({self.get_status_display()})"

    @property
    def is_dispute(self) -> bool:
        return self.escalated_at is not None

    @property
    def dispute_is_open(self) -> bool:
        return self.is_dispute and self.dispute_closed_at is None


@receiver([post_save, post_delete], sender=Attestation)
def count_notes_on_save(sender: type[Attestation], instance: Attestation, **kwargs: Any) -> None:
    """Through every save and delete; moderation by queryset update recounts in attestations.services."""
    count_notes([instance.run_id])


def count_notes(run_ids: Iterable[int]) -> None:
    """Keep the runs' counts of approved notes (Run.note_count), by which a run page knows whether to read them."""
    ids = sorted(set(run_ids))
    if ids:
        Run.objects.filter(pk__in=ids).update(note_count=count_per_run(Attestation.objects.approved()))


@receiver([post_save, post_delete], sender=IssueReport)
def count_issue_reports_on_save(sender: type[IssueReport], instance: IssueReport, **kwargs: Any) -> None:
    """Through every save and delete (a queryset's delete sends it for each row); moderation changes a report's
    status, never whether the public sees it."""
    count_issue_reports([instance.run_id])


def count_issue_reports(run_ids: Iterable[int]) -> None:
    """Keep the runs' counts of issue reports (Run.issue_report_count), all of them public in kind, date and
    status, by which a run page knows whether to read them."""
    ids = sorted(set(run_ids))
    if ids:
        Run.objects.filter(pk__in=ids).update(issue_report_count=count_per_run(IssueReport.objects.all()))
