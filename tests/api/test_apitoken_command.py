"""`manage.py apitoken` and the admin: a token is shown once, only its hash is kept, and revoking ends it."""

from __future__ import annotations

import hashlib
import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from api.models import ApiToken
from tests.api.conftest import SUBMIT_URL, demo_lines

pytestmark = pytest.mark.django_db


def apitoken(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("apitoken", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def submits(secret: str) -> int:
    response = Client().post(
        SUBMIT_URL, demo_lines()[0], content_type="application/json", headers={"Authorization": f"Bearer {secret}"}
    )
    return response.status_code


def test_create_prints_the_token_once_and_stores_only_its_hash() -> None:
    out, err = apitoken("create", "flashinfer team", "--source", "kernelindex")

    secret = out.strip()
    assert secret.startswith("ki_") and len(secret) > 40
    assert "shown this once" in err
    token = ApiToken.objects.get(name="flashinfer team")
    assert token.digest == hashlib.sha256(secret.encode()).hexdigest()
    assert secret.startswith(token.prefix)
    stored = [str(value) for value in ApiToken.objects.values_list().get()]
    assert not any(secret in value for value in stored)
    # Listing names the token by its prefix, never in full.
    listed, _ = apitoken("list")
    assert token.prefix in listed and secret not in listed
    assert submits(secret) == 201


def test_revoke_by_name_or_prefix_ends_the_token() -> None:
    first, _ = apitoken("create", "first")
    second, _ = apitoken("create", "second")
    prefix = ApiToken.objects.get(name="second").prefix

    apitoken("revoke", "first")
    apitoken("revoke", prefix)

    assert submits(first.strip()) == 401
    assert submits(second.strip()) == 401
    assert ApiToken.objects.active().count() == 0
    with pytest.raises(CommandError, match="revoked already"):
        apitoken("revoke", "first")


def test_an_unknown_source_is_refused_naming_the_valid_ones() -> None:
    with pytest.raises(CommandError) as refused:
        apitoken("create", "someone", "--source", "nowhere")

    message = str(refused.value)
    assert "'nowhere'" in message
    for source in ("sol-execbench", "kernelbench", "flashinfer-bench", "kernelindex"):
        assert source in message
    assert not ApiToken.objects.exists()


def test_names_are_unique() -> None:
    apitoken("create", "twice")
    with pytest.raises(CommandError, match="exists already"):
        apitoken("create", "twice")


def test_the_admin_shows_a_new_token_once_and_revokes_it() -> None:
    client = Client()
    client.force_login(User.objects.create_superuser("admin", password="x"))

    created = client.post("/admin/api/apitoken/add/", {"name": "sol mirror", "source": "sol-execbench", "project": ""})

    assert created.status_code == 200
    token = ApiToken.objects.get(name="sol mirror")
    secret = created.context["secret"]
    assert hashlib.sha256(secret.encode()).hexdigest() == token.digest
    assert secret in created.content.decode()
    assert "no-store" in created["Cache-Control"]
    # Not shown again anywhere: not on its change page, not in the list.
    assert secret not in client.get(f"/admin/api/apitoken/{token.pk}/change/").content.decode()
    assert secret not in client.get("/admin/api/apitoken/").content.decode()

    client.post("/admin/api/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})

    token.refresh_from_db()
    assert token.revoked_at is not None
