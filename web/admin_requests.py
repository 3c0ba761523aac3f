"""The admin's lists, guarded against parameters they would answer with a 500 and a traceback.

Every ModelAdmin's list reads lookups from its query string (`?run_id__startswith=…`)
and an action from a form (`action`, `_selected_action`). Three kinds of value
got past Django's checks and failed later:

- a regular-expression lookup (`__regex`, `__iregex`): the database compiles the
  pattern only when the query runs, so `(` or `*` failed there. A valid one may
  keep the database busy for as long as it likes; moderators have the search box.
- a lookup Django accepts but cannot turn into SQL (`?pk__range=1`);
- an action whose selected rows are not ids (`_selected_action=abc`, or empty).

The guard runs for every model admin on the site, Django's own included: Django
marks the views it makes for a ModelAdmin with it (`view.model_admin`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.admin import ModelAdmin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.views.main import IGNORED_PARAMS
from django.core.exceptions import ValidationError
from django.db import DatabaseError
from django.db.models.constants import LOOKUP_SEP
from django.http import HttpRequest

REGEX_LOOKUPS = {"regex", "iregex"}
# What a list's lookups raise when the database, or Django's SQL compiler, cannot apply them.
LOOKUP_FAILURES = (DatabaseError, ValueError, TypeError, IndexError)


def list_admin(request: HttpRequest, view: Callable[..., Any] | None = None) -> ModelAdmin[Any] | None:
    """The ModelAdmin whose list (changelist) the request is for; None for any other view."""
    match = request.resolver_match
    view = view or (match.func if match else None)
    model_admin = getattr(view, "model_admin", None)
    if model_admin is None or match is None or not (match.url_name or "").endswith("_changelist"):
        return None
    return model_admin  # type: ignore[no-any-return]


def lookups(request: HttpRequest) -> list[str]:
    """The lookups in the list's query string (not its page, ordering, search or other own parameters)."""
    return [name for name in request.GET if name not in IGNORED_PARAMS]


def malformed_list_request(request: HttpRequest, model_admin: ModelAdmin[Any]) -> str | None:
    """Why the list cannot be shown, or None when it can."""
    if any(REGEX_LOOKUPS & set(name.split(LOOKUP_SEP)) for name in lookups(request)):
        return "regular-expression lookup in the admin"
    if request.method == "POST" and "action" in request.POST:
        primary_key = model_admin.model._meta.pk
        assert primary_key is not None
        for selected in request.POST.getlist(ACTION_CHECKBOX_NAME):
            try:
                primary_key.to_python(selected)
            except ValidationError:
                return "an admin action's selected row is not an id"
    return None


def failed_lookups(request: HttpRequest, exception: Exception) -> str | None:
    """Why a list with lookups failed, when its lookups are what failed; None for any other error."""
    if list_admin(request) is None or not lookups(request) or not isinstance(exception, LOOKUP_FAILURES):
        return None
    return f"admin lookups the database could not apply: {type(exception).__name__}"
