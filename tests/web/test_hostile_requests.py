"""Hostile requests to every URL the site has get a 400 and one short log line, never a 500.

The URLs come from the URLconf itself (the admin's included), so a new page is
covered the day it is added. On PostgreSQL a NUL character reaching a query used
to fail with a 500; a form declared in UTF-16 or an unknown charset failed on
every POST endpoint.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client

HOSTILE_CHARSETS = ["utf-16", "no-such-charset"]
FORM = "application/x-www-form-urlencoded"


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
