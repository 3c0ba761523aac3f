"""HEAD is answered wherever GET is, with the same status and headers and no body (load balancers, link checkers)."""

from __future__ import annotations

import io

from django.contrib.auth.models import User
from django.core.handlers.wsgi import WSGIHandler
from django.test import Client, RequestFactory


def comparable_headers(response: object) -> dict[str, str]:
    headers = dict(response.headers)  # type: ignore[attr-defined]
    # A fresh client gets a fresh CSRF cookie each time: its name must match, not its value.
    headers.pop("Set-Cookie", None)
    # A page that must not be cached expires "now": the second of the clock, which may tick between the two.
    if "max-age=0" in headers.get("Cache-Control", ""):
        headers.pop("Expires", None)
    return headers


def test_every_public_page_answers_head_like_get(every_url: list[str]) -> None:
    public = [url for url in every_url if not url.startswith("/admin/")]
    assert "/healthz" in public and "/" in public
    for url in public:
        got, head = Client().get(url), Client().head(url)
        if got.status_code == 405:  # a POST-only endpoint (the moderators' rerun button): no GET to mirror
            assert head.status_code == 405, url
            continue
        # The favicon's address sends browsers on to the icon; the walk has no dump for a dump file's address.
        expected = 301 if url == "/favicon.ico" else 404 if url.startswith("/dumps/") and url.count("/") > 2 else 200
        assert (got.status_code, head.status_code) == (expected, expected), url
        assert head.content == b"", url
        assert comparable_headers(head) == comparable_headers(got), url
        assert sorted(head.cookies) == sorted(got.cookies), url


def test_head_on_the_admin_login(every_url: list[str], admin_user: User) -> None:
    response = Client().head("/admin/login/")
    assert response.status_code == 200 and response.content == b""


def test_the_wsgi_app_sends_no_body_for_head(db: None) -> None:
    """Through the WSGI handler itself, as gunicorn calls it (the test client drops HEAD bodies on its own)."""
    started: list[tuple[str, list[tuple[str, str]]]] = []
    environ = RequestFactory().head("/healthz").environ | {"wsgi.input": io.BytesIO(b"")}
    body = b"".join(WSGIHandler()(environ, lambda status, headers: started.append((status, headers))))
    status, headers = started[0]
    assert (status, body, dict(headers)["Content-Length"]) == ("200 OK", b"", "2")
