"""Moderators' side of the verification domain: rerun requests, workers and their keys, the policy's pauses,
and the run list's action that requests reruns (added to runs' RunAdmin here: runs imports nothing of this
app). Records are read-only, as in runs/admin.py."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from attestations import admin as attestations_admin
from attestations.admin import moderator_of
from attestations.models import IssueReport
from records.attestation import WORKER_NAME_PATTERN, AttestationError, key_id, load_public_key
from records.hardware import CLASSES, UnknownHardwareClassError, hardware_class_named
from runs import admin as runs_admin
from runs.admin import ReadOnlyAdmin
from runs.models import Run
from verification.disputes import DisputeRefusedError, escalate, may_escalate, outcome_words
from verification.models import RerunRequest, RerunWorker, VerificationPause, WorkerKey
from verification.reruns import RerunRefusedError, cancel_rerun, may_request_rerun, queued_message, request_rerun
from verification.selectors import live_hardware_classes
from verification.worker_keys import revoke_worker_key


class RunAdmin(runs_admin.RunAdmin):
    """runs' run admin, with the action that requests a controlled rerun of the selected runs."""

    actions = (*runs_admin.RunAdmin.actions, "request_reruns")

    def has_request_rerun_permission(self, request: HttpRequest) -> bool:
        return may_request_rerun(request.user)

    @admin.action(description="Request a controlled rerun of the selected runs", permissions=["request_rerun"])
    def request_reruns(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        for run in queryset:
            try:
                rerun = request_rerun(run, user=request.user, reason="asked from the admin")
            except RerunRefusedError as refusal:
                messages.warning(request, f"Run {run.run_id}: {refusal}.")
            else:
                messages.success(request, f"Run {run.run_id}: {queued_message(rerun)}")


admin.site.unregister(Run)
admin.site.register(Run, RunAdmin)


class IssueReportAdmin(attestations_admin.IssueReportAdmin):
    """attestations' report admin, with a report's dispute and the action that opens one (verification/disputes.py):
    attestations imports nothing of verification, so the action is added here, as the rerun action is to runs'."""

    list_display = [*attestations_admin.IssueReportAdmin.list_display[:-1], "dispute", "moderated_by"]
    readonly_fields = [*attestations_admin.IssueReportAdmin.readonly_fields, "dispute"]
    actions = [*attestations_admin.IssueReportAdmin.actions, "escalate_to_dispute"]

    @admin.display(description="dispute")
    def dispute(self, obj: IssueReport) -> str:
        """Where its dispute stands ('' for a report that is none): open on its rerun, or its outcome."""
        return outcome_words(obj) if obj.is_dispute else ""

    def has_escalate_permission(self, request: HttpRequest) -> bool:
        # One name for both permissions it needs: the admin offers an action to anyone with any one of its list.
        return may_escalate(request.user)

    @admin.action(description="Escalate to a dispute: rerun the run, outcome in public", permissions=["escalate"])
    def escalate_to_dispute(self, request: HttpRequest, queryset: QuerySet[IssueReport]) -> None:
        """One step: each report is answered by a rerun (the run's own, where one already waits), shown on
        /disputes; a report that cannot be says why."""
        moderator = moderator_of(request)
        for report in queryset.select_related("run"):
            try:
                rerun = escalate(report, moderator)
            except DisputeRefusedError as refused:
                messages.error(request, f"Report #{report.pk} on run {report.run.run_id} not escalated: {refused}.")
            else:
                said = f"Report #{report.pk} on run {report.run.run_id} is a dispute, answered by rerun #{rerun.pk}."
                messages.success(request, said)


admin.site.unregister(IssueReport)
admin.site.register(IssueReport, IssueReportAdmin)


@admin.register(RerunRequest)
class RerunRequestAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "run",
        "state",
        "verdict",
        "hardware",
        "requested_by",
        "requested_at",
        "attempts",
        "worker",
        "finished_at",
        "rule_version",
        "tolerance",
    )
    list_filter = ("state", "verdict", "hardware", "rule_version")
    search_fields = ("run__run_id", "worker", "failure_reason")
    list_select_related = ("run", "requested_by")
    actions = ("cancel",)

    def has_request_rerun_permission(self, request: HttpRequest) -> bool:
        return may_request_rerun(request.user)

    @admin.action(description="Cancel the selected queued reruns", permissions=["request_rerun"])
    def cancel(self, request: HttpRequest, queryset: QuerySet[RerunRequest]) -> None:
        cancelled = sum(cancel_rerun(rerun, request.user) for rerun in queryset.select_related("run"))
        messages.info(request, f"{cancelled} rerun(s) cancelled; a rerun a worker has started runs to its end.")


@admin.register(RerunWorker)
class RerunWorkerAdmin(ReadOnlyAdmin):
    """The workers that serve rerun queues; a class without a live one leaves its requests waiting."""

    list_display = ("name", "hardware", "live", "seen_at", "started_at")
    list_filter = ("hardware",)

    @admin.display(boolean=True, description="live")
    def live(self, worker: RerunWorker) -> bool:
        return worker.seen_at >= timezone.now() - timedelta(seconds=settings.RERUN_STALE_AFTER_SECONDS)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        live = live_hardware_classes()
        serving = ", ".join(f"{name} ({count})" for name, count in sorted(live.items())) or "none"
        waiting = ", ".join(name for name in CLASSES if name not in live)
        messages.info(
            request, f"Classes with a live worker: {serving}. A rerun requested on any other waits: {waiting}."
        )
        return super().changelist_view(request, extra_context)


class WorkerKeyForm(forms.ModelForm):  # type: ignore[type-arg]
    """A worker registered by its public key, where its key was made on the worker's host (the private half
    never leaves it). `manage.py worker_key create` makes both halves instead and prints the private one once."""

    class Meta:
        model = WorkerKey
        fields = ("name", "hardware", "public_key")
        labels = {"hardware": "Hardware classes (comma-separated)"}

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if not re.fullmatch(WORKER_NAME_PATTERN, name):
            raise forms.ValidationError("Letters, digits, '.', '_' and '-', at most 100.")
        return name

    def clean_hardware(self) -> str:
        try:
            names = sorted(
                {hardware_class_named(name.strip()).name for name in self.cleaned_data["hardware"].split(",")}
            )
        except UnknownHardwareClassError as unknown:
            raise forms.ValidationError(str(unknown)) from None
        return ",".join(names)

    def clean_public_key(self) -> str:
        text: str = self.cleaned_data["public_key"].strip()
        try:
            load_public_key(text)
        except AttestationError as error:
            raise forms.ValidationError(str(error)) from None
        if WorkerKey.objects.filter(key_id=key_id(text)).exists():
            raise forms.ValidationError("This key is registered already.")
        return text

    def save(self, commit: bool = True) -> WorkerKey:
        key: WorkerKey = super().save(commit=False)
        key.key_id, key.created_at = key_id(key.public_key), timezone.now()
        if commit:
            key.save()
        return key


@admin.register(WorkerKey)
class WorkerKeyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """The worker registry: who may write a rerun's result. A key is added, revoked, never edited or deleted.

    A key kept from a dump's own key list is listed beside them as published by that dump: it is no worker of
    this site's, and a name it shares with one registered here is only what the dump said."""

    form = WorkerKeyForm
    list_display = ("name", "hardware", "key_id", "created_at", "revoked_at", "provenance")
    list_filter = ("revoked_at", "registered_here")
    search_fields = ("name", "key_id", "published_by")
    actions = ("revoke",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        fields = ("name", "hardware", "public_key", "key_id", "created_at", "revoked_at", "provenance")
        return fields if obj is not None else ()

    @admin.display(description="provenance", ordering="registered_here")
    def provenance(self, key: WorkerKey) -> str:
        return key.provenance

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # its attestations name it: a key is revoked, never deleted

    @admin.action(
        description="Revoke the selected keys (nothing they sign is taken from now on)", permissions=["change"]
    )
    def revoke(self, request: HttpRequest, queryset: QuerySet[WorkerKey]) -> None:
        revoked = [key for key in queryset.filter(registered_here=True) if revoke_worker_key(key.name)]
        for key in revoked:
            self.log_change(request, key, f"Revoked worker {key.name}'s key")
        messages.info(request, f"{len(revoked)} key(s) revoked.")


class VerificationPauseForm(forms.ModelForm):  # type: ignore[type-arg]
    hardware_class = forms.ChoiceField(choices=[(name, name) for name in CLASSES])

    class Meta:
        model = VerificationPause
        fields = ("hardware_class", "reason")


@admin.register(VerificationPause)
class VerificationPauseAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Pausing the verification policy for a hardware class: add a row; deleting it resumes the policy.
    /verification says which classes are paused; moderators' own requests are never paused."""

    form = VerificationPauseForm
    list_display = ("hardware_class", "paused_by", "paused_at", "reason")
    readonly_fields = ("paused_by", "paused_at")

    def save_model(self, request: HttpRequest, obj: VerificationPause, form: Any, change: bool) -> None:
        if not change:
            obj.paused_by = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)
