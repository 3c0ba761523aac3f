"""The moderation queue: approve or reject attestations, triage issue reports.

Every decision needs the model's change permission (a view-only moderator can read the
queue and change nothing) and lands in the admin's history with who and when: the
actions through attestations.services, the edit form through ModelAdmin.log_change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.forms import BaseForm, Form, ModelForm
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from attestations.models import Attestation, IssueReport
from attestations.services import moderate_attestations, set_report_status
from runs.display import format_latency
from runs.models import Run
from web.scopes import DISPUTE, NOTE_MODERATED, REPORT

# Django's classes take no type parameters at run time; django-stubs' do.
if TYPE_CHECKING:
    AttestationModelAdmin = admin.ModelAdmin[Attestation]
    IssueReportModelAdmin = admin.ModelAdmin[IssueReport]
else:
    AttestationModelAdmin = IssueReportModelAdmin = admin.ModelAdmin


def moderator_of(request: HttpRequest) -> User:
    """The signed-in staff user; the admin lets no one else this far."""
    if not isinstance(request.user, User):
        raise PermissionDenied
    return request.user


def _record_moderator(obj: Attestation | IssueReport, form: ModelForm[Any], request: HttpRequest, change: bool) -> None:
    """A status changed in the edit form is a moderation decision like an action's."""
    if change and "status" in form.changed_data:
        obj.moderated_at = timezone.now()
        obj.moderated_by = moderator_of(request)


def _change_message(form: BaseForm, default: Any) -> Any:
    """The admin's usual "Changed …" entry, saying which way the status went when it did."""
    if "status" not in form.changed_data:
        return default
    fields = ", ".join(str(form.fields[name].label or name) for name in form.changed_data)
    return f"Status {form.initial.get('status')} → {form.cleaned_data['status']} (edit form); changed {fields}."


def _tell_moderator(request: HttpRequest, changed: int, total: int, verb: str) -> None:
    unchanged = f" ({total - changed} already {verb})" if total > changed else ""
    messages.success(request, f"{changed} {verb}{unchanged}.")


class RunLinkMixin:
    @admin.display(description="run", ordering="run__run_id")
    def run_link(self, obj: Attestation | IssueReport) -> SafeString:
        """The run as its public page, where the moderator can see what the note is about."""
        run: Run = obj.run
        return format_html('<a href="{}">{}</a>', run.get_absolute_url(), run.run_id)


@admin.register(Attestation)
class AttestationAdmin(RunLinkMixin, AttestationModelAdmin):
    list_display = ["created_at", "run_link", "kind", "outcome", "measured_latency", "gpu", "author_name", "status"]
    list_filter = ["status", "kind", "outcome"]
    search_fields = ["run__run_id", "body", "gpu", "author_name"]
    list_select_related = ["run"]
    readonly_fields = ["run_link", "created_at", "moderated_at", "moderated_by"]
    raw_id_fields = ["run"]
    date_hierarchy = "created_at"
    actions = ["approve", "reject"]

    @admin.display(description="measured latency", ordering="measured_latency_ns")
    def measured_latency(self, obj: Attestation) -> str:
        return format_latency(obj.measured_latency_ns)

    @admin.action(description="Approve: show on the run page", permissions=["change"])
    def approve(self, request: HttpRequest, queryset: QuerySet[Attestation]) -> None:
        changed = moderate_attestations(queryset, Attestation.Status.APPROVED, moderator_of(request))
        _tell_moderator(request, changed, queryset.count(), "approved")

    @admin.action(description="Reject: never show", permissions=["change"])
    def reject(self, request: HttpRequest, queryset: QuerySet[Attestation]) -> None:
        changed = moderate_attestations(queryset, Attestation.Status.REJECTED, moderator_of(request))
        _tell_moderator(request, changed, queryset.count(), "rejected")

    def construct_change_message(self, request: HttpRequest, form: Form, formsets: Any, add: bool = False) -> Any:
        return _change_message(form, super().construct_change_message(request, form, formsets, add))

    def save_model(self, request: HttpRequest, obj: Attestation, form: ModelForm[Attestation], change: bool) -> None:
        _record_moderator(obj, form, request, change)
        super().save_model(request, obj, form, change)
        NOTE_MODERATED.retire_on_commit(obj.run)

    def delete_model(self, request: HttpRequest, obj: Attestation) -> None:
        super().delete_model(request, obj)
        NOTE_MODERATED.retire_on_commit(obj.run)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Attestation]) -> None:
        runs = list(Run.objects.filter(attestations__in=queryset).distinct().only("run_id"))
        super().delete_queryset(request, queryset)
        NOTE_MODERATED.retire_on_commit(*runs)


@admin.register(IssueReport)
class IssueReportAdmin(RunLinkMixin, IssueReportModelAdmin):
    list_display = ["created_at", "run_link", "category", "short_body", "status", "moderated_by"]
    list_filter = ["status", "category", "dispute_outcome"]
    search_fields = ["run__run_id", "body", "resolution_note"]
    list_select_related = ["run", "moderated_by", "rerun"]
    readonly_fields = [
        "run_link",
        "created_at",
        "moderated_at",
        "moderated_by",
        "escalated_at",
        "dispute_closed_at",
    ]
    raw_id_fields = ["run"]
    date_hierarchy = "created_at"
    actions = ["triage", "resolve", "dismiss"]

    @admin.display(description="report")
    def short_body(self, obj: IssueReport) -> str:
        return obj.body if len(obj.body) <= 80 else f"{obj.body[:79]}…"

    @admin.action(description="Mark triaged", permissions=["change"])
    def triage(self, request: HttpRequest, queryset: QuerySet[IssueReport]) -> None:
        changed = set_report_status(queryset, IssueReport.Status.TRIAGED, moderator_of(request))
        _tell_moderator(request, changed, queryset.count(), "triaged")

    @admin.action(description="Mark resolved", permissions=["change"])
    def resolve(self, request: HttpRequest, queryset: QuerySet[IssueReport]) -> None:
        changed = set_report_status(queryset, IssueReport.Status.RESOLVED, moderator_of(request))
        _tell_moderator(request, changed, queryset.count(), "resolved")

    @admin.action(description="Mark dismissed", permissions=["change"])
    def dismiss(self, request: HttpRequest, queryset: QuerySet[IssueReport]) -> None:
        changed = set_report_status(queryset, IssueReport.Status.DISMISSED, moderator_of(request))
        _tell_moderator(request, changed, queryset.count(), "dismissed")

    def construct_change_message(self, request: HttpRequest, form: Form, formsets: Any, add: bool = False) -> Any:
        return _change_message(form, super().construct_change_message(request, form, formsets, add))

    def save_model(self, request: HttpRequest, obj: IssueReport, form: ModelForm[IssueReport], change: bool) -> None:
        _record_moderator(obj, form, request, change)
        super().save_model(request, obj, form, change)
        REPORT.retire_on_commit(obj.run)
        if obj.is_dispute:  # its public summary or status may have changed
            DISPUTE.retire_on_commit(obj.run)
