"""Request types shared by the apps' views, and the one way a request is refused as malformed."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.loader import render_to_string
from django.utils.log import log_response
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request that passed django-htmx's middleware: `request.htmx` is truthy for htmx requests."""

    htmx: HtmxDetails


def bad_request(request: HttpRequest, problem: str) -> HttpResponse:
    """A 400 with the site's page for it, logged as one line that says what was wrong (never a traceback)."""
    response = HttpResponseBadRequest(render_to_string("400.html"))
    log_response("Bad Request (%s): %s", problem, request.path, response=response, request=request)
    return response
