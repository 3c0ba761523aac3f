"""Hostile requests to every URL the site has get a 400 and one short log line, never a 500.

The URLs come from the URLconf itself (the admin's included), so a new page is
covered the day it is added. On PostgreSQL a NUL character reaching a query used
to fail with a 500; a form declared in UTF-16 or an unknown charset failed on
every POST endpoint.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from attestations.models import Attestation, IssueReport
from runs.models import Definition, Run
from tests.conftest import ImportRuns

HOSTILE_CHARSETS = ["utf-16", "no-such-charset"]
FORM = "application/x-www-form-urlencoded"


def named_patterns(resolver: URLResolver, namespace: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from named_patterns(entry, inner)
        elif entry.name:
            yield f"{namespace}{entry.name}", entry


def example_arguments(name: str, pattern: URLPattern, run: Run, user: User) -> dict[str, str]:
    """A real value for each of the pattern's parameters, so the request reaches the view's lookups."""
    definition = run.definition
    assert definition is not None
    values = {
        "run_id": run.run_id,
        "a": run.run_id,
        "b": run.run_id,
        "digest": run.digest,
        "key": "sol-execbench" if "source" in name else str(run.group.key if run.group else ""),
        "source": definition.source,
        "name": definition.name,
        "app_label": "runs",
        "content_type_id": str(ContentType.objects.get_for_model(Run).pk),
        "object_id": str(run.pk),
        "id": str(user.pk),
    }
    model = _admin_model(name)
    if model is not None and (instance := model.objects.first()) is not None:
        values["object_id"] = str(instance.pk)
    return {param: values[param] for param in pattern.pattern.regex.groupindex}


def _admin_model(name: str) -> type | None:
    """The model of an admin URL name such as `admin:runs_run_change`."""
    for model in apps.get_models():
        if name.startswith(f"admin:{model._meta.app_label}_{model._meta.model_name}_"):
            return model
    return None


@pytest.fixture
def every_url(import_runs: ImportRuns, sample: Path, admin_user: User) -> list[str]:
    import_runs(sample / "sol-execbench")
    run = Run.objects.filter(definition__isnull=False, group__isnull=False).order_by("run_id").first()
    assert run is not None and Definition.objects.exists()
    Attestation.objects.create(run=run, kind="note", body="a note")
    IssueReport.objects.create(run=run, category="other", body="a report")
    urls = [
        reverse(name, kwargs=example_arguments(name, pattern, run, admin_user))
        for name, pattern in named_patterns(get_resolver())
    ]
    assert "/admin/login/" in urls and f"/runs/{run.run_id}/notes" in urls and "/healthz" in urls
    return urls


def hostile_requests(client: Client, url: str) -> Iterator[tuple[str, int]]:
    """(what was sent, the status it got) for each hostile variant of one URL."""
    yield "NUL in the path", client.get(f"{url}%00").status_code
    yield "NUL in the query", client.get(url, {"q": "a\x00b", "page": "\x00"}).status_code
    yield "NUL in a posted path", client.post(f"{url}%00", {"x": "1"}).status_code
    yield "NUL in a form field", client.post(url, "username=a%00b&body=%00", content_type=FORM).status_code
    for charset in HOSTILE_CHARSETS:
        content_type = f"{FORM}; charset={charset}"
        yield f"a form in {charset}", client.generic("POST", url, b"username=a&password=b", content_type).status_code


@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "staff"])
def test_every_url_answers_hostile_requests_with_400(
    every_url: list[str], admin_user: User, signed_in: bool, caplog: pytest.LogCaptureFixture
) -> None:
    client = Client(raise_request_exception=False)
    if signed_in:
        client.force_login(admin_user)
    caplog.set_level(logging.INFO)
    unexpected = [
        f"{url}: {what} → {status}"
        for url in every_url
        for what, status in hostile_requests(client, url)
        if status != 400
    ]
    assert unexpected == []
    # One line per request, no traceback.
    assert all(record.exc_info is None for record in caplog.records)
    assert all(len(record.getMessage()) < 300 for record in caplog.records)
    assert {record.getMessage().split(":")[0] for record in caplog.records} <= {
        "Bad Request (NUL in the address)",
        "Bad Request (NUL in a form field)",
        "Bad Request (charset other than UTF-8)",
    }


def test_ordinary_requests_still_pass(client: Client, every_url: list[str]) -> None:
    assert client.get("/", {"q": "rmsnorm"}).status_code == 200
    assert client.get("/healthz").status_code == 200
    utf8 = f"{FORM}; charset=UTF-8"
    response = client.post("/admin/login/", "username=nobody&password=wrong", content_type=utf8)
    assert response.status_code == 200
    assert "Please enter the correct username and password" in response.content.decode()
