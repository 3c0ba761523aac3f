"""Every list in the admin answers malformed lookups and actions with a 400 and one log line, never a 500.

The lists come from the admin site itself (Django's own included), so a model
registered later is covered the day it is. Each request runs in a savepoint of
its own: on PostgreSQL a failed query would otherwise spoil the ones after it,
where in production each request has its own connection state.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.db import models, transaction
from django.test import Client

from attestations.models import Attestation, IssueReport
from runs.models import Run


def text_field(model: type[models.Model]) -> str:
    """A text column of the model a moderator could filter on (any will do; not the password)."""
    return next(
        field.name
        for field in model._meta.get_fields()
        if isinstance(field, models.CharField | models.TextField) and field.name != "password"
    )


def lists() -> Iterator[tuple[str, type[models.Model], Any]]:
    for model, model_admin in admin.site._registry.items():
        yield f"/admin/{model._meta.app_label}/{model._meta.model_name}/", model, model_admin


def lookups(model: type[models.Model]) -> list[dict[str, str]]:
    field = text_field(model)
    return [
        {f"{field}__iregex": "*"},
        {f"{field}__regex": "("},
        {f"{field}__regex": "^ok$"},  # even a valid one: moderators search instead
        {f"{field}__lower__iregex": "["},
        {"pk__range": "1"},
    ]


@pytest.fixture
def moderator(client: Client, run: Run, admin_user: User) -> Client:
    Attestation.objects.create(run=run, kind="note", body="a note")
    IssueReport.objects.create(run=run, category="other", body="a report")
    client.raise_request_exception = False
    client.force_login(admin_user)
    return client


def status_in_savepoint(request: Any) -> int:
    with transaction.atomic():
        status: int = request().status_code
        transaction.set_rollback(True)
    return status


def test_malformed_lookups_get_400(moderator: Client, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    answers = [
        (url, query, status_in_savepoint(lambda url=url, query=query: moderator.get(url, query)))
        for url, model, _ in lists()
        for query in lookups(model)
    ]
    assert [answer for answer in answers if answer[2] != 400] == []
    assert all(record.exc_info is None for record in caplog.records)
    assert {record.getMessage().split(":")[0] for record in caplog.records} <= {
        "Bad Request (regular-expression lookup in the admin)",
        "Bad Request (admin lookups the database could not apply",
    }


def test_actions_on_rows_that_are_not_ids_get_400(moderator: Client, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    answers = []
    for url, model, model_admin in lists():
        if not isinstance(model._meta.pk, models.IntegerField):
            continue  # "abc" may well be an id there (a document's digest is its key)
        action = next(iter(model_admin.actions or ["delete_selected"]))
        for selected in ("abc", "", "1.5"):
            form = {"action": action, "_selected_action": selected, "index": "0"}
            answers.append((url, selected, status_in_savepoint(lambda url=url, form=form: moderator.post(url, form))))
    assert [answer for answer in answers if answer[2] != 400] == []
    assert all(record.exc_info is None for record in caplog.records)


def test_ordinary_lists_and_actions_still_work(moderator: Client, run: Run) -> None:
    assert moderator.get("/admin/runs/run/", {"q": run.run_id, "status__exact": "passed"}).status_code == 200
    assert moderator.get("/admin/runs/run/", {"run_id__startswith": run.run_id[:4]}).status_code == 200
    assert moderator.get("/admin/runs/run/", {"withdrawn_at__isempty": "1"}).status_code == 200
    note = Attestation.objects.get()
    form = {"action": "approve", "_selected_action": str(note.pk), "index": "0"}
    assert moderator.post("/admin/attestations/attestation/", form).status_code == 302
    note.refresh_from_db()
    assert note.status == "approved"
