"""Site-wide request and response guards that belong in one place rather than in every view."""

from __future__ import annotations

import codecs
from collections.abc import Callable
from urllib.parse import unquote_plus, unquote_to_bytes

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.loader import render_to_string
from django.utils.log import log_response

# What a form may declare: browsers send UTF-8 (and say nothing) for a page served as UTF-8.
ACCEPTED_CHARSETS = {"utf-8", "ascii"}
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"


class RejectMalformedRequestsMiddleware:
    """Answer 400, with one log line, to requests that no view could handle without an error.

    A NUL character anywhere in the path, query string, cookies or a form field
    cannot be stored in PostgreSQL text, so every lookup it reached failed with a
    500 and a long traceback; a body declared in a charset other than UTF-8 made
    Django decode the form (and even the query string) as gibberish or fail on an
    unknown codec. Checking here, before sessions, CSRF and the views, keeps every
    view from having to think about it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = malformed_because(request)
        if problem is None:
            return self.get_response(request)
        response = HttpResponseBadRequest(render_to_string("400.html"))
        log_response("Bad Request (%s): %s", problem, request.path, response=response, request=request)
        return response


def malformed_because(request: HttpRequest) -> str | None:
    """Why the request cannot be served, or None when it can."""
    charset = request.content_params.get("charset") if request.content_params else None
    if charset is not None and not _accepted_charset(charset):
        return "charset other than UTF-8"
    if "\x00" in request.path_info or "\x00" in unquote_plus(request.META.get("QUERY_STRING", "")):
        return "NUL in the address"
    if any("\x00" in value for value in request.COOKIES.values()):
        return "NUL in a cookie"
    # Only plain form bodies are read here: a multipart body may hold a file, where a NUL is ordinary.
    if request.method == "POST" and request.content_type == FORM_CONTENT_TYPE and b"\x00" in _decoded_body(request):
        return "NUL in a form field"
    return None


def _accepted_charset(charset: str) -> bool:
    try:
        return codecs.lookup(charset).name in ACCEPTED_CHARSETS
    except LookupError:
        return False


def _decoded_body(request: HttpRequest) -> bytes:
    """The form body with its %-escapes undone (as bytes: the body need not be valid UTF-8)."""
    return unquote_to_bytes(request.body.replace(b"+", b" "))


class ContentSecurityPolicyMiddleware:
    """Send settings.CONTENT_SECURITY_POLICY with every response that does not set its own.

    The policy allows no inline script or style: an injected `<script>` or `style=`
    does nothing, so a slip in escaping cannot become script running on the site.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.policy: str = settings.CONTENT_SECURITY_POLICY

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.policy:
            response.headers.setdefault("Content-Security-Policy", self.policy)
        return response


class HeadWithoutBodyMiddleware:
    """A HEAD request gets what GET would, status and headers (Content-Length included), without the body.

    WSGI servers drop the body of a HEAD response themselves, but gunicorn logs a line
    each time it has to, and a load balancer may ask every few seconds.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.method == "HEAD" and not response.streaming:
            response.headers.setdefault("Content-Length", str(len(response.content)))
            response.content = b""
        return response
