"""Site-wide request and response guards that belong in one place rather than in every view."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, unquote_plus, unquote_to_bytes

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from web.admin_requests import failed_lookups, list_admin, malformed_list_request
from web.http import bad_request
from web.ratelimit import UnknownClientError

# The one charset a body may declare, spelled as Django reads it. Browsers declare none for a page served as
# UTF-8; another spelling of UTF-8 (`UTF8`, `utf_8`, `U8`, `cp65001`) or ASCII is refused rather than guessed at:
# Django itself refuses those bodies halfway through the CSRF check, and its own 400 page then failed the same way.
ACCEPTED_CHARSET = "utf-8"
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
# What no address, cookie or form field may hold (PostgreSQL text cannot); the API's document says so of every
# text parameter (api/schemas.py).
NUL = "\x00"


class RejectMalformedRequestsMiddleware:
    """Answer 400, with one log line, to requests that no view could handle without an error.

    A NUL character anywhere in the path, query string, cookies or a form field
    cannot be stored in PostgreSQL text, so every lookup it reached failed with a
    500 and a long traceback. A body declared in a charset other than UTF-8 made
    Django decode the form (and even the query string) as gibberish or fail on an
    unknown codec; one declared as UTF-8 by another of its names, or as ASCII,
    made Django refuse the body halfway through the CSRF check, and its own 400
    page then failed the same way: a 500. Each is now a 400 naming the charset
    a client must send. Checking here, before sessions, CSRF and
    the views, keeps every view from having to think about it. The admin's lists
    are guarded too (web/admin_requests.py).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        malformed = malformed_because(request)
        if malformed is not None:
            return bad_request(request, malformed.problem)
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> HttpResponse | None:
        model_admin = list_admin(request, view)
        if model_admin is not None and (problem := malformed_list_request(request, model_admin)):
            return bad_request(request, problem)
        return None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, UnknownClientError):
            # A rate-limited form, or the admin's sign-in, from a client whose address the proxies did not give.
            return bad_request(request, str(exception))
        problem = failed_lookups(request, exception)
        return bad_request(request, problem) if problem else None


class Malformed(NamedTuple):
    """Why a request cannot be served, and the part of it at fault where one can be named (the API says it)."""

    problem: str
    field: str | None = None


def malformed_because(request: HttpRequest) -> Malformed | None:
    """Why the request cannot be served, or None when it can."""
    charset = request.content_params.get("charset") if request.content_params else None
    if charset is not None and charset.strip().lower() != ACCEPTED_CHARSET:
        return Malformed("charset other than UTF-8", "Content-Type")
    query = request.META.get("QUERY_STRING", "")
    if NUL in request.path_info or NUL in unquote_plus(query):
        return Malformed("NUL in the address", None if NUL in request.path_info else _holding_nul(query))
    if any(NUL in value for value in request.COOKIES.values()):
        return Malformed("NUL in a cookie", "Cookie")
    # Only plain form bodies are read here: a multipart body may hold a file, where a NUL is ordinary.
    is_form = request.method == "POST" and request.content_type == FORM_CONTENT_TYPE
    if is_form and NUL.encode() in _decoded_body(request):
        return Malformed("NUL in a form field")
    return None


def _holding_nul(query: str) -> str | None:
    """The name of the first query parameter whose name or value holds a NUL."""
    for name, value in parse_qsl(query, keep_blank_values=True):
        if NUL in name + value:
            return name.replace(NUL, "")
    return None


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
