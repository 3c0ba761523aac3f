"""Request types shared by the apps' views."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request that passed django-htmx's middleware: `request.htmx` is truthy for htmx requests."""

    htmx: HtmxDetails
