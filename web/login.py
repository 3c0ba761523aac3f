"""The admin's sign-in form, with a brake on guessing passwords."""

from __future__ import annotations

import math
from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError

from web import ratelimit


class ThrottledAdminLoginForm(AdminAuthenticationForm):
    """After a few attempts from one network at one username, the next waits for the window to turn.

    Attempts are counted before the password is checked, atomically, so a burst of
    parallel guesses gets no more tries than a patient guesser. A successful sign-in
    clears the count; the same username from another network has its own.
    """

    def clean(self) -> dict[str, Any]:
        username, password = self.cleaned_data.get("username"), self.cleaned_data.get("password")
        if self.request is None or not username or not password:
            return super().clean()
        key = ratelimit.sign_in_key(self.request, username)
        if wait := ratelimit.take(key, ratelimit.SIGN_INS_PER_WINDOW, ratelimit.SIGN_IN_WINDOW_SECONDS):
            minutes = math.ceil(wait / 60)
            raise ValidationError(
                f"Too many failed sign-ins for this account from your network; try again in {minutes} minutes.",
                code="too_many_attempts",
            )
        cleaned = super().clean()
        ratelimit.forget(key, ratelimit.SIGN_IN_WINDOW_SECONDS)
        return cleaned
