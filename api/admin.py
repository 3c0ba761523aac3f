"""API tokens in the admin: a new token is shown once, on the page that follows its creation; revoking is an action."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from api.models import ApiToken
from records.identity import NATIVE_SOURCE
from records.sources import SOURCES

if TYPE_CHECKING:
    ApiTokenModelAdmin = admin.ModelAdmin[ApiToken]
    ApiTokenModelForm = forms.ModelForm[ApiToken]
else:
    ApiTokenModelAdmin = admin.ModelAdmin
    ApiTokenModelForm = forms.ModelForm


class ApiTokenForm(ApiTokenModelForm):
    source = forms.ChoiceField(choices=[(key, key) for key in SOURCES], initial=NATIVE_SOURCE)

    class Meta:
        model = ApiToken
        fields = ("name", "source", "project")


@admin.register(ApiToken)
class ApiTokenAdmin(ApiTokenModelAdmin):
    form = ApiTokenForm
    list_display = ("name", "prefix", "source", "project", "created_at", "last_used_at", "revoked_at")
    list_filter = ("source",)
    search_fields = ("name", "prefix", "project")
    readonly_fields = ("prefix", "created_at", "last_used_at", "revoked_at")
    actions = ("revoke",)

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> Any:
        # A token's scope is what it was issued with: a different scope is a new token.
        return self.readonly_fields + (("source", "project") if obj else ())

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if not change:
            # Kept on the request only, for the page that shows it once (response_add).
            request.new_api_token = obj.issue_secret()  # type: ignore[attr-defined]
        super().save_model(request, obj, form, change)

    def response_add(self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None) -> HttpResponse:
        """The new token, shown on this response and nowhere else; never put in a message or a session."""
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "token": obj,
            "secret": getattr(request, "new_api_token", ""),
            "title": f"API token {obj.name} created",
        }
        response = TemplateResponse(request, "admin/api/apitoken/created.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        revoked = sum(token.revoke() for token in queryset)
        messages.success(request, f"{revoked} revoked ({queryset.count() - revoked} already were).")
