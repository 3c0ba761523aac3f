"""Moderators work here. Records are read-only: only withdrawal (a tombstone) is a moderator's edit.

Withdrawing and restoring need the run's change permission, and are logged in the admin's history;
a run's change page lists that history together with the moderation of its notes and reports.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from runs.display import format_latency
from runs.models import ComparisonGroup, Definition, Document, ImportLog, Run, SourceBoard
from runs.services import restore_run, withdraw_run

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
    actions: tuple[str, ...] = ("restore",)  # verification/admin.py adds requesting reruns

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # withdraw instead: a permalink must never disappear

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
