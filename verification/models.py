"""The verification domain's rows: rerun requests and their attestations, the workers and their keys, the
evidence changes reruns made, and the policy's pauses.

They were runs' models once, and keep runs' table names (Meta.db_table): the move to this app changed no table
(verification/migrations/0001_initial.py and runs/migrations/0021 are state-only).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import models
from django.db.models import Q

from records.attestation import AttestationError, Attested, verified_statement
from records.canonical import DIGEST_LENGTH
from records.hardware import queue_of
from records.schema import HARNESS_VERSION_MAX_LENGTH
from runs.models import EVIDENCE_LABELS, Run

logger = logging.getLogger(__name__)


# What a rerun can decide about the run it reran: one of the evidence levels, in their spelling; never "reported".
VERDICTS = [(level.value, level.label) for level in (Run.Evidence.REPRODUCED, Run.Evidence.NOT_REPRODUCED)]


class RerunRequestQuerySet(models.QuerySet["RerunRequest"]):
    def active(self) -> RerunRequestQuerySet:
        return self.filter(state__in=RerunRequest.ACTIVE_STATES)


class RerunRequest(models.Model):
    """A moderator's request for a controlled rerun: the row is the source of truth, the broker carries its id."""

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    ACTIVE_STATES = (State.QUEUED, State.RUNNING)

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rerun_requests")
    run_digest = models.CharField(max_length=DIGEST_LENGTH, help_text="The version of the run that was rerun.")
    hardware = models.CharField(max_length=64, help_text="The hardware class whose queue runs it.")
    reason = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    # Sending is separate from asking: with the broker down the request waits here and the sweep sends it.
    sent_at = models.DateTimeField(null=True, blank=True)
    send_error = models.CharField(max_length=500, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=255, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    failure_status = models.CharField(max_length=32, blank=True)
    failure_reason = models.TextField(blank=True)
    log_tail = models.TextField(blank=True)
    harness_seconds = models.FloatField(null=True, blank=True, help_text="How long the harness itself ran.")
    result_run = models.OneToOneField(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="rerun_result_of"
    )
    # The level a conclusive rerun decided; empty while it has not decided, and when it could not (inconclusive).
    verdict = models.CharField(max_length=16, blank=True, choices=VERDICTS)
    verdict_reason = models.TextField(blank=True)
    # The evidence rule that decided the verdict (records.rerun.RULE_VERSION) and its tolerance, a fraction.
    rule_version = models.PositiveSmallIntegerField(null=True, blank=True)
    tolerance = models.FloatField(null=True, blank=True)
    # An attempt that came out inconclusive is queued again; the sweep sends it once this time has come.
    retry_at = models.DateTimeField(null=True, blank=True)
    # Why each attempt before the last came out inconclusive, in order: the page says "after N attempts" with each.
    attempt_reasons = models.JSONField(default=list, blank=True)
    # The job the current attempt is sent as, a fresh id for each attempt: only the worker that took this job
    # can answer it, once (verification.collector).
    job_id = models.CharField(max_length=32, blank=True, db_index=True)
    # The harness options every job of this request is sent with, fixed when it is asked for: the collector
    # takes a result only when its attestation names exactly these (records.worker_protocol.HARNESS_OPTIONS).
    harness_options = models.JSONField(default=dict, blank=True)
    # The registered key of the worker that took the current attempt (`worker` names its process).
    worker_key = models.ForeignKey("WorkerKey", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # The worker keys (their key ids) that must not run it: a rerun asked for the quorum (records/quorum.py) goes
    # to a worker that has not voted on this version yet. The site refuses their claim; the job tells them too.
    not_by_keys = models.JSONField(default=list, blank=True)
    # The harness that judged it, as its attested result names it: its page (/harness/<hex>) lists the hostile cases
    # that version's own suite ran (records/harness_suites.py). Empty until a result is recorded.
    harness_version = models.CharField(max_length=HARNESS_VERSION_MAX_LENGTH, blank=True)
    harness_digest = models.CharField(max_length=DIGEST_LENGTH, blank=True)
    # The signed attestation whose figures the verdict was decided on: `reevaluate` reads these, never a run.
    attestation = models.OneToOneField(
        "RerunAttestation", null=True, blank=True, on_delete=models.SET_NULL, related_name="decided"
    )

    objects = RerunRequestQuerySet.as_manager()

    class Meta:
        db_table = "runs_rerunrequest"  # its table from before the move (runs/migrations)
        ordering = ["-requested_at", "-id"]
        permissions = [("request_rerun", "Can request a controlled rerun")]
        constraints = [
            # Never two at once for one run, whatever races the check in the service.
            models.UniqueConstraint(
                fields=["run"], condition=Q(state__in=["queued", "running"]), name="one_active_rerun_per_run"
            )
        ]
        indexes = [
            models.Index(fields=["state", "requested_at"], name="rerun_state"),
            models.Index(fields=["harness_digest", "-finished_at"], name="rerun_harness"),
        ]

    def __str__(self) -> str:
        return f"Rerun #{self.pk} of {self.run}"

    @property
    def is_active(self) -> bool:
        return self.state in self.ACTIVE_STATES

    @property
    def queue(self) -> str:
        return queue_of(self.hardware)

    @property
    def verdict_label(self) -> str:
        """The verdict in the evidence levels' one spelling ('Not reproduced'); empty while there is none."""
        return EVIDENCE_LABELS.get(self.verdict, self.verdict)

    @property
    def rule_label(self) -> str:
        return rule_label(self.rule_version, self.tolerance)

    @property
    def attempt_history(self) -> list[str]:
        """Each inconclusive attempt's reason before the last, as stored (strings only: a stored value is shown,
        never trusted to be well formed)."""
        reasons = self.attempt_reasons if isinstance(self.attempt_reasons, list) else []
        return [str(reason) for reason in reasons]


class EvidenceChange(models.Model):
    """Each move of a run's evidence level: by a rerun, or back to "reported" when nothing of the run's current
    version stands (a new version no rerun has checked); the history the run page shows."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="evidence_changes")
    previous = models.CharField(max_length=16, choices=Run.Evidence.choices)
    evidence = models.CharField(max_length=16, choices=Run.Evidence.choices)
    # The rerun that moved it; none where nothing of the run's current version stood any more (a new version of the
    # run, which no rerun has checked, took it back to "reported"): `version` names that version then.
    rerun = models.ForeignKey(
        RerunRequest, null=True, blank=True, on_delete=models.CASCADE, related_name="evidence_changes"
    )
    version = models.CharField(max_length=DIGEST_LENGTH, blank=True)
    changed_at = models.DateTimeField(auto_now_add=True)
    # The rule that made the change (records.rerun.RULE_VERSION) and its tolerance; empty before rule 2.
    rule_version = models.PositiveSmallIntegerField(null=True, blank=True)
    tolerance = models.FloatField(null=True, blank=True)

    class Meta:
        db_table = "runs_evidencechange"  # its table from before the move (runs/migrations)
        ordering = ["-changed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.run}: {self.previous} → {self.evidence}"

    @property
    def rule_label(self) -> str:
        return rule_label(self.rule_version, self.tolerance)


def rule_label(version: int | None, tolerance: float | None) -> str:
    """The evidence rule a decision was made by, as pages quote it: 'rule 2, tolerance ±10%'."""
    if version is None:
        return ""
    return f"rule {version}, tolerance ±{tolerance or 0:.0%}"


class RerunWorker(models.Model):
    """A rerun worker process (harness.worker), as its last signed heartbeat left it: live while it beats."""

    name = models.CharField(max_length=255, unique=True)
    # The hardware classes whose queues it consumes, comma-separated.
    hardware = models.CharField(max_length=500)
    # The id of the key its beats are signed with: a quorum's rerun waits for a live worker of another key.
    key_id = models.CharField(max_length=DIGEST_LENGTH, blank=True)
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField()

    class Meta:
        db_table = "runs_rerunworker"  # its table from before the move (runs/migrations)
        ordering = ["hardware", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hardware})"

    @property
    def classes(self) -> list[str]:
        return [name for name in self.hardware.split(",") if name]


class WorkerKeyQuerySet(models.QuerySet["WorkerKey"]):
    def registered_here(self) -> WorkerKeyQuerySet:
        """The keys of this site's own workers: the only ones whose word the collector takes."""
        return self.filter(registered_here=True)


class WorkerKey(models.Model):
    """A rerun worker's public key, the one thing that lets a worker write a rerun's result.

    `manage.py worker_key create NAME --class CLASS` makes one and prints its private half once; only the
    public half is kept, and published at /api/v1/workers with its revocation. A key read from another
    site's dump (to verify the attestations it carries) is kept beside this site's own, never taken as one.
    """

    name = models.CharField(max_length=100)
    # The hardware classes it may attest for, comma-separated.
    hardware = models.CharField(max_length=500)
    public_key = models.CharField(max_length=64, help_text="ed25519: its 32 raw bytes, base64.")
    key_id = models.CharField(max_length=DIGEST_LENGTH, unique=True, help_text="sha256 of the raw public key.")
    created_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    registered_here = models.BooleanField(
        default=True, help_text="False for a key read from another site's dump: it verifies, it never signs here."
    )
    # Where a key not registered here came from: a dump's own key list is provenance, never this site's word.
    published_by = models.CharField(
        max_length=300, blank=True, help_text="For a key read from a dump: the dump, as its manifest names it."
    )

    objects = WorkerKeyQuerySet.as_manager()

    class Meta:
        db_table = "runs_workerkey"  # its table from before the move (runs/migrations)
        ordering = ["name", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["name"], condition=Q(registered_here=True), name="one_worker_key_per_name")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.hardware}){' revoked' if self.revoked_at else ''}"

    @property
    def classes(self) -> list[str]:
        return [name for name in self.hardware.split(",") if name]

    @property
    def provenance(self) -> str:
        """Whose key it is, as the admin, `worker_key list` and the run pages say it."""
        if self.registered_here:
            return "registered here"
        return f"published by {self.published_by or 'a dump of another site'}"


class RerunAttestation(models.Model):
    """A worker's signed attestation of one attempt of a rerun, as it came (a DSSE envelope).

    Every attested attempt is kept, the inconclusive ones too; a job id is taken once (unique), so an
    attestation sent again, for this request or another, is refused. The request's `attestation` is the one
    its verdict stands on, published at /reruns/<id>/attestation.json.
    """

    request = models.ForeignKey(RerunRequest, on_delete=models.CASCADE, related_name="attestations")
    attempt = models.PositiveIntegerField()
    job_id = models.CharField(max_length=32, unique=True)
    worker_key = models.ForeignKey(WorkerKey, on_delete=models.PROTECT, related_name="attestations")
    envelope = models.JSONField()
    received_at = models.DateTimeField()
    # Beside the attestation, for moderators only: the harness's log as the worker sent it, and its time.
    log_tail = models.TextField(blank=True)
    harness_seconds = models.FloatField(null=True, blank=True)

    class Meta:
        db_table = "runs_rerunattestation"  # its table from before the move (runs/migrations)
        ordering = ["request", "attempt"]

    def __str__(self) -> str:
        return f"Rerun #{self.request_id} attempt {self.attempt} by {self.worker_key.name}"

    def verified(self) -> Attested | None:
        """Its statement, verified again with the key that signed it, before anything reads a figure of it
        (reevaluate, the evidence, the pages, the dumps, the API); None, logged, where it no longer verifies (an
        envelope edited where it is stored), which then moves nothing."""
        try:
            return verified_statement(self.envelope, self.worker_key.public_key)
        except (AttestationError, ValueError) as error:
            logger.error("the attestation of job %s no longer verifies: %s", self.job_id, error)
            return None


class VerificationPause(models.Model):
    """A moderator paused the verification policy (verification/policy.py) for one hardware class: it queues
    nothing of that class until the row is deleted. A moderator's own requests still go through."""

    hardware_class = models.CharField(max_length=64, unique=True)
    paused_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    paused_at = models.DateTimeField(auto_now_add=True)
    reason = models.CharField(max_length=300, blank=True)

    class Meta:
        db_table = "runs_verificationpause"  # its table from before the move (runs/migrations)
        ordering = ["hardware_class"]

    def __str__(self) -> str:
        return f"verification paused on {self.hardware_class}"
