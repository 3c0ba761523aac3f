"""Moderators work here. Records are read-only: only withdrawal (a tombstone) is a moderator's edit.

Withdrawing and restoring need the run's change permission, and are logged in the admin's history;
a run's change page lists that history together with the moderation of its notes and reports.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from records.attestation import WORKER_NAME_PATTERN, AttestationError, key_id, load_public_key
from records.hardware import CLASSES, UnknownHardwareClassError, hardware_class_named
from runs.display import format_latency
from runs.models import (
    ComparisonGroup,
    Definition,
    Document,
    ImportLog,
    RerunRequest,
    RerunWorker,
    Run,
    SourceBoard,
    VerificationPause,
    WorkerKey,
)
from runs.reruns import RerunRefusedError, cancel_rerun, may_request_rerun, queued_message, request_rerun
from runs.selectors import live_hardware_classes
from runs.services import restore_run, withdraw_run
from runs.worker_keys import revoke_worker_key

MODERATION_HISTORY_ROWS = 200


def moderation_log(run: Run) -> QuerySet[LogEntry]:
    """The admin's log entries on the run and on every row of it the admin edits (its notes and issue reports,
    which attestations keeps), newest first. The rows are found through the relations that point at Run, so
    runs need not know the apps that add them."""
    on = Q(content_type=ContentType.objects.get_for_model(Run), object_id=str(run.pk))
    for relation in Run._meta.related_objects:
        model = relation.related_model
        if relation.one_to_many and isinstance(model, type) and admin.site.is_registered(model):
            rows = model._default_manager.filter(**{relation.field.name: run}).values_list("pk", flat=True)
            on |= Q(content_type=ContentType.objects.get_for_model(model), object_id__in=[str(pk) for pk in rows])
    return LogEntry.objects.filter(on).select_related("user", "content_type").order_by("-action_time", "-id")


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class WithdrawForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Run
        fields = ("withdrawn_reason",)
        labels = {"withdrawn_reason": "Withdrawal reason (leave empty to keep or restore the run)"}


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    form = WithdrawForm
    list_display = (
        "run_id",
        "public_page",
        "source",
        "external_id",
        "implementation_name",
        "hardware",
        "status",
        "evidence",
        "latency",
        "withdrawn",
    )
    list_filter = ("source", "status", "evidence", "hardware", ("withdrawn_at", admin.EmptyFieldListFilter))
    search_fields = ("run_id", "external_id", "implementation_name", "project", "definition__name")
    list_select_related = ("definition",)
    show_full_result_count = False
    readonly_fields = (
        "run_id",
        "public_page",
        "source",
        "external_id",
        "title",
        "digest",
        "definition",
        "group",
        "status",
        "evidence",
        "latency_ns",
        "source_score",
        "source_rank",
        "observed_at",
        "published_at",
        "withdrawn_at",
        "declared_digests",
        "versions",
        "moderation_history",
    )
    actions = ("restore", "request_reruns")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # withdraw instead: a permalink must never disappear

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

    @admin.display(description="page")
    def public_page(self, run: Run) -> str:
        # The run id is the change link beside it: this one only needs to say where it goes.
        return format_html('<a href="{}">view</a>', run.get_absolute_url())

    @admin.display(description="latency", ordering="latency_ns")
    def latency(self, run: Run) -> str:
        """As the pages print it ('483.8 µs'), not a float of nanoseconds the column cannot hold."""
        return format_latency(run.latency_ns)

    @admin.display(description="withdrawn", boolean=True, ordering="withdrawn_at")
    def withdrawn(self, run: Run) -> bool:
        return run.withdrawn_at is not None

    @admin.display(description="versions")
    def versions(self, run: Run) -> str:
        rows = format_html_join(
            "",
            "<li><code>{}</code> imported {}</li>",
            ((version.digest, f"{version.imported_at:%Y-%m-%d %H:%M}") for version in run.versions.all()),
        )
        return format_html("<ul>{}</ul>", rows)

    def save_model(self, request: HttpRequest, obj: Run, form: Any, change: bool) -> None:
        reason = form.cleaned_data.get("withdrawn_reason", "")
        if reason.strip():
            withdraw_run(obj, reason, by=request.user)
            messages.info(request, f"Run {obj.run_id} is withdrawn; its record stays as a tombstone.")
        elif obj.withdrawn_at is not None:
            restore_run(obj, by=request.user)
            messages.info(request, f"Run {obj.run_id} is restored.")

    def construct_change_message(self, request: HttpRequest, form: Any, formsets: Any, add: bool = False) -> Any:
        """The history says what the moderator did: withdrew (and why) or restored."""
        reason = form.cleaned_data.get("withdrawn_reason", "").strip()
        if reason and reason != form.initial.get("withdrawn_reason"):
            return f"Withdrawn: {reason}"
        if not reason and form.initial.get("withdrawn_reason"):
            return "Restored (edit form)."
        return super().construct_change_message(request, form, formsets, add)

    @admin.action(description="Restore the selected withdrawn runs", permissions=["change"])
    def restore(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        for run in queryset.exclude(withdrawn_at=None):
            restore_run(run, by=request.user)
            self.log_change(request, run, "Restored (moderation action).")

    @admin.display(description="moderation history")
    def moderation_history(self, run: Run) -> str:
        """Every logged act on the run, its notes and its reports, newest first: who did what, when."""
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (f"{entry.action_time:%Y-%m-%d %H:%M}", entry.user, entry.object_repr, entry.get_change_message())
                for entry in moderation_log(run)[:MODERATION_HISTORY_ROWS]
            ),
        )
        if not rows:
            return "Nothing moderated yet."
        return format_html(
            "<table><thead><tr><th>when (UTC)</th><th>who</th><th>what</th><th>act</th></tr></thead>"
            "<tbody>{}</tbody></table>",
            rows,
        )


@admin.register(Document)
class DocumentAdmin(ReadOnlyAdmin):
    list_display = ("digest", "kind", "name", "stored_at")
    list_filter = ("kind",)
    search_fields = ("digest", "name")
    show_full_result_count = False


@admin.register(Definition)
class DefinitionAdmin(ReadOnlyAdmin):
    list_display = ("name", "source", "external_id", "title", "case_count")
    list_filter = ("source", "subset")
    search_fields = ("name", "title", "external_id")


@admin.register(ComparisonGroup)
class ComparisonGroupAdmin(ReadOnlyAdmin):
    list_display = ("key", "definition", "hardware", "harness", "harness_version")
    list_filter = ("hardware", "family")
    search_fields = ("key", "definition__name")


@admin.register(SourceBoard)
class SourceBoardAdmin(ReadOnlyAdmin):
    list_display = ("source", "definition_external_id", "hardware", "stack_version", "top_score", "updated_at")


@admin.register(ImportLog)
class ImportLogAdmin(ReadOnlyAdmin):
    list_display = ("path", "source", "started_at", "created", "updated", "unchanged", "skipped", "failed")
    list_filter = ("source",)
    search_fields = ("path", "error")

    @admin.display(boolean=True)
    def failed(self, log: ImportLog) -> bool:
        return bool(log.error)


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
