"""Guessing admin passwords is slowed down per network and username; the account's owner elsewhere is not."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.pages import visible_text
from web import ratelimit

LOGIN = "/admin/login/"
WRONG = "Please enter the correct username and password"
TOO_MANY = "Too many failed sign-ins for this account from your network; try again in"


@pytest.fixture
def moderator(db: None, settings: Any) -> User:
    # Many sign-ins per test: a fast hasher keeps them quick; the throttle does not depend on it.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return User.objects.create_user("mod", password="correct horse battery staple", is_staff=True)


@pytest.fixture
def window_start(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A settable clock, 60 s into a sign-in window."""
    now = [1_000_000 * ratelimit.SIGN_IN_WINDOW_SECONDS + 60.0]
    monkeypatch.setattr(ratelimit, "_now", lambda: now[0])
    return now


def sign_in(client: Client, password: str, address: str = "198.51.100.7", username: str = "mod") -> str:
    response = client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)
    if response.status_code == 302:
        return "signed in"
    return visible_text(response.content)


def test_after_five_failures_even_the_right_password_waits(moderator: User, window_start: list[float]) -> None:
    for _ in range(ratelimit.SIGN_INS_PER_WINDOW):
        assert WRONG in sign_in(Client(), "guess")
    refused = sign_in(Client(), "correct horse battery staple")
    assert f"{TOO_MANY} 14 minutes." in refused

    # Another network signs in to the same account, and another username from this network is not held back.
    assert sign_in(Client(), "correct horse battery staple", address="203.0.113.50") == "signed in"
    assert WRONG in sign_in(Client(), "guess", username="someone-else")

    window_start[0] += ratelimit.SIGN_IN_WINDOW_SECONDS
    assert sign_in(Client(), "correct horse battery staple") == "signed in"


def test_a_successful_sign_in_clears_the_count(moderator: User, window_start: list[float]) -> None:
    for _ in range(ratelimit.SIGN_INS_PER_WINDOW - 1):
        sign_in(Client(), "typo")
    assert sign_in(Client(), "correct horse battery staple") == "signed in"
    for _ in range(ratelimit.SIGN_INS_PER_WINDOW - 1):
        assert WRONG in sign_in(Client(), "typo")
    assert sign_in(Client(), "correct horse battery staple") == "signed in"
