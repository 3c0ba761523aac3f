"""HEAD is answered wherever GET is, with the same status and headers and no body (load balancers, link checkers)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client


def comparable_headers(response: object) -> dict[str, str]:
    headers = dict(response.headers)  # type: ignore[attr-defined]
    # A fresh client gets a fresh CSRF cookie each time: its name must match, not its value.
    headers.pop("Set-Cookie", None)
    return headers


def test_every_public_page_answers_head_like_get(every_url: list[str]) -> None:
    public = [url for url in every_url if not url.startswith("/admin/")]
    assert "/healthz" in public and "/" in public
    for url in public:
        got, head = Client().get(url), Client().head(url)
        assert (got.status_code, head.status_code) == (200, 200), url
        assert head.content == b"", url
        assert comparable_headers(head) == comparable_headers(got), url
        assert sorted(head.cookies) == sorted(got.cookies), url


def test_head_on_the_admin_login(every_url: list[str], admin_user: User) -> None:
    response = Client().head("/admin/login/")
    assert response.status_code == 200 and response.content == b""
