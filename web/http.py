"""Request types shared by the apps' views, and the one way a request is refused as malformed."""

from __future__ import annotations

from urllib.parse import parse_qsl

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.loader import render_to_string
from django.utils.log import log_response
from django_htmx.middleware import HtmxDetails

from api.problems import is_api_request, problem_response


class HtmxHttpRequest(HttpRequest):
    """A request that passed django-htmx's middleware: `request.htmx` is truthy for htmx requests."""

    htmx: HtmxDetails


def bad_request(request: HttpRequest, problem: str) -> HttpResponse:
    """A 400 with the site's page for it (under /api/, the API's problem details), logged as one line that says
    what was wrong (never a traceback)."""
    if is_api_request(request):
        response: HttpResponse = problem_response(request, 400, problem, malformed_field(request, problem))
    else:
        response = HttpResponseBadRequest(render_to_string("400.html"))
    log_response("Bad Request (%s): %s", problem, request.path, response=response, request=request)
    return response


def malformed_field(request: HttpRequest, problem: str) -> str | None:
    """The part of the request a malformed-request refusal names (web.middleware.malformed_because's words): the
    header, or the query parameter holding a NUL."""
    if "charset" in problem:
        return "Content-Type"
    if "cookie" in problem:
        return "Cookie"
    if "NUL in the address" in problem and "\x00" not in request.path_info:
        for name, value in parse_qsl(request.META.get("QUERY_STRING", ""), keep_blank_values=True):
            if "\x00" in name + value:
                return name.replace("\x00", "")
    return None
