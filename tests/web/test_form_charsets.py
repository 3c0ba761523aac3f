"""A form declaring its charset: "utf-8" is read; any other spelling or charset gets a 400 and one log line.

Django reads a form body only when the charset is spelled exactly "utf-8", and
raised BadRequest for every other spelling. With a CSRF cookie present, the CSRF
check read the body first, and so did Django's own 400 page, which raised again:
a 500 and 57 KB of traceback, for anyone who sent any 32-character cookie.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client

from attestations.models import Attestation
from runs.models import Run
from tests.attestations.form_data import note_data

FORM = "application/x-www-form-urlencoded"
# Other spellings of UTF-8, ASCII, and charsets that are not UTF-8 at all.
REFUSED = [
    "ascii",
    "us-ascii",
    "UTF8",
    "utf_8",
    "U8",
    "cp65001",
    "latin-1",
    "utf-16",
    "no-such-charset",
    "utf-8-sig",
    "",
]


def form_urls(run: Run) -> list[str]:
    return [f"/runs/{run.run_id}/notes", f"/runs/{run.run_id}/report", f"/runs/{run.run_id}/rerun", "/admin/login/"]


def visitor_with_a_cookie() -> Client:
    """A client as an attacker is: CSRF checks on, and a made-up 32-character csrftoken cookie."""
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    client.cookies["csrftoken"] = secrets.token_hex(16)
    return client


@pytest.mark.parametrize("charset", ["utf-8", "UTF-8"])
def test_a_note_posted_as_utf8_is_read(run: Run, charset: str) -> None:
    client = Client(enforce_csrf_checks=True)
    form = client.get(f"/runs/{run.run_id}/notes").content.decode()
    token = form.split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
    data: dict[str, Any] = note_data(body="Très bien: 181 µs") | {"csrfmiddlewaretoken": token}
    body = urlencode(data).encode()
    response = client.generic("POST", f"/runs/{run.run_id}/notes", body, f"{FORM}; charset={charset}")
    assert response.status_code == 302
    assert Attestation.objects.get().body == "Très bien: 181 µs"


@pytest.mark.parametrize("charset", REFUSED)
def test_a_form_in_any_other_charset_gets_a_400_and_one_line(
    run: Run, charset: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    client = visitor_with_a_cookie()
    for url in form_urls(run):
        caplog.clear()
        response = client.generic("POST", url, b"username=a&password=b", f"{FORM}; charset={charset}")
        assert response.status_code == 400, (url, response.status_code)
        assert [record.getMessage() for record in caplog.records] == [f"Bad Request (charset other than UTF-8): {url}"]
        assert caplog.records[0].exc_info is None
