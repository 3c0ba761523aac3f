"""The API's one error shape: RFC 9457 problem details, for every answer under /api/ that is not a success.

Whatever part of the stack refuses a request under /api/ answers with a
`Problem` as `application/problem+json`: the views (`problem_response`), the
malformed-request guard (web.http.bad_request), Django's error handlers and
CSRF failure view (`bad_request` … `csrf_failure`, wired in kernelindex/urls.py
and settings), and, for anything else (a 405 from method dispatch, say),
`ProblemDetailsMiddleware`, which rewrites any other error answer into the
same shape. The OpenAPI document declares these answers from the same models
(`problems()`, and `declare_problems` in api/endpoints.py), so a client reads
one shape, with the offending field where there is one.

An endpoint joins by listing its error statuses with `problems(...)` in its
`response=` and answering errors with `problem_response` (or by raising
Http404 / ninja's ValidationError, which the API's handlers turn into problems).
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from django.views.csrf import csrf_failure as django_csrf_failure
from pydantic import BaseModel, ConfigDict, Field

API_PREFIX = "/api/"
PROBLEM_CONTENT_TYPE = "application/problem+json"
# Headers of an error answer that say how to recover; kept when a non-problem answer is rewritten.
RECOVERY_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")


class Problem(BaseModel):
    """An error, as RFC 9457 problem details. `type` is always about:blank: `title` is the status's phrase,
    `detail` says what went wrong, `field` names the offending part of the request where there is one."""

    model_config = ConfigDict(extra="allow")

    type: str = Field("about:blank", description="The problem type: about:blank, the HTTP status says it.")
    title: str = Field(description="The HTTP status's phrase, e.g. Unprocessable Content.")
    status: int = Field(ge=400, le=599, description="The HTTP status code.")
    detail: str = Field(description="What went wrong, in words.")
    instance: str = Field(description="The path of the request refused.")
    field: str | None = Field(
        None,
        description="The offending part of the request, where there is one: a query or path parameter's name, a "
        "header's name (Host, Content-Type, Authorization), or the dotted path to a field of the body.",
    )


class SubmissionProblem(Problem):
    """A submission refused; nothing of it was stored. Where a manifest was at fault, where in it."""

    line: int | None = Field(None, description="The JSONL line (1-based); null for a JSON document.")
    manifest: int | None = Field(None, description="The manifest's index in a JSON array (0-based); else null.")
    document: str | None = Field(None, description="The manifest member at fault: run, protocol, environment, …")
    message: str | None = Field(None, description="The importer's message, without the place.")


# What each error status means for this API, as its OpenAPI responses describe it.
STATUS_MEANINGS = {
    400: "Malformed: a NUL, a charset other than UTF-8, a Host not served, or a query string that is not UTF-8.",
    401: "No bearer token, or an unknown or revoked one (WWW-Authenticate says which).",
    403: "The token may not submit this run (another source or project).",
    404: "Nothing at this address.",
    405: "The address does not take this method (Allow lists those it takes).",
    413: "The body is larger than the limit.",
    415: "A body of a type the operation does not read.",
    422: "A parameter or the body is invalid; `field` names it.",
    429: "Too many requests with this token; Retry-After says when to try again.",
    500: "The server failed.",
}


def is_api_request(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def problem_body(request: HttpRequest, status: int, detail: str, field: str | None = None, **extra: Any) -> dict:
    return {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "instance": request.path,
        "field": field,
        **extra,
    }


def problem_response(
    request: HttpRequest, status: int, detail: str, field: str | None = None, **extra: Any
) -> JsonResponse:
    """An error answer in the API's one shape."""
    return JsonResponse(
        problem_body(request, status, detail, field, **extra), status=status, content_type=PROBLEM_CONTENT_TYPE
    )


def problems(*statuses: int, model: type[Problem] = Problem) -> dict[int, type[Problem]]:
    """An operation's error answers for ninja's `response=`: `{**problems(404, 422)}`. Every operation also gets
    the 400 any request can (api.endpoints.declare_problems adds it)."""
    return dict.fromkeys(statuses, model)


def is_problem(response: HttpResponse) -> bool:
    return str(response.get("Content-Type", "")).startswith(PROBLEM_CONTENT_TYPE)


class ProblemDetailsMiddleware:
    """Any error answer under /api/ that is not a problem yet (a 405 from method dispatch, a view that answered
    an error page) becomes one, with its status, a sentence for it and its recovery headers."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code < 400 or not is_api_request(request) or is_problem(response):
            return response
        detail = STATUS_MEANINGS.get(response.status_code, HTTPStatus(response.status_code).phrase)
        if response.status_code == 405 and response.has_header("Allow"):
            detail = f"{request.method} is not taken here; this address takes {response['Allow']}."
        rewritten = problem_response(request, response.status_code, detail)
        for header in RECOVERY_HEADERS:
            if response.has_header(header):
                rewritten[header] = response[header]
        return rewritten


# -- Django's error handlers, answering problems under /api/ and the site's pages elsewhere -----------------------


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api_request(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return problem_response(request, 413, "the request body is larger than the limit")
    message = str(exception)
    field = "Host" if message.startswith("Invalid HTTP_HOST header") else None
    return problem_response(request, 400, message or STATUS_MEANINGS[400], field)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api_request(request):
        return defaults.permission_denied(request, exception)
    return problem_response(request, 403, str(exception) or "forbidden")


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api_request(request):
        return defaults.page_not_found(request, exception)
    return problem_response(request, 404, f"no such API address: {request.path}")


def server_error(request: HttpRequest) -> HttpResponse:
    if not is_api_request(request):
        return defaults.server_error(request)
    return problem_response(request, 500, "the server failed; the error is logged")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """The API takes bearer tokens and is exempt from CSRF; should a view under it ever check, it answers so."""
    if not is_api_request(request):
        return django_csrf_failure(request, reason)
    return problem_response(request, 403, f"CSRF verification failed: {reason}", "X-CSRFToken")
