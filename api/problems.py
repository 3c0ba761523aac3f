"""The API's one error shape: RFC 9457 problem details (`application/problem+json`) for every error under /api/.

How an endpoint joins (api/endpoints.py has six examples):

    @api.get("/workers", response={200: WorkerList, **problems(404, 422)})
    def list_workers(request, ...):
        ...
        return problem_response(request, 404, "no such worker", field="name")

- `problems(*statuses)` declares the operation's error answers for ninja's `response=`; every operation also
  gets the 400 any request can get (`declare_problems` adds it to the document). An operation with a token
  declares 401, one with a rate limit 429 (its `Retry-After` is documented here, in PROBLEM_HEADERS).
- `problem_response(request, status, detail, field)` answers an error; raising Http404 or failing a parameter's
  validation answers one too (the API's exception handlers, api/endpoints.py).
- tests/api/test_problems.py walks the document: an operation that forgets to declare its errors fails it.

Whatever else refuses a request under /api/ (a malformed request, a Host not served, CSRF, an unknown address,
a method an address does not take, a server error, with DEBUG on or off) is rewritten into the same shape by
`ProblemDetailsMiddleware`; outside /api/ every answer is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.csrf import csrf_failure as site_csrf_failure
from pydantic import BaseModel, ConfigDict, Field

from web.middleware import malformed_because

API_PREFIX = "/api/"
PROBLEM_CONTENT_TYPE = "application/problem+json"
# Headers of an error answer that say how to recover; kept when an answer is rewritten as a problem.
RECOVERY_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")


class Problem(BaseModel):
    """An error, as RFC 9457 problem details. `type` is about:blank: the status says what kind of error it is,
    `detail` what went wrong, and `field` which part of the request, where one is at fault."""

    model_config = ConfigDict(extra="allow")

    type: str = Field("about:blank", description="The problem type: about:blank, the HTTP status says it.")
    title: str = Field(description="The HTTP status's phrase, e.g. Not Found.")
    status: int = Field(ge=400, le=599, description="The HTTP status code.")
    detail: str = Field(description="What went wrong, in words.")
    instance: str = Field(description="The path of the request refused.")
    field: str | None = Field(
        None,
        description="The part of the request at fault, where one is: a query or path parameter's name, a header's "
        "name (Host, Content-Type, Authorization, X-CSRFToken), or the dotted path to a field of the body.",
    )


class SubmissionProblem(Problem):
    """A submission refused; nothing of it was stored. Where a manifest was at fault, where in it."""

    line: int | None = Field(None, description="The JSONL line (1-based); null for a JSON document.")
    manifest: int | None = Field(None, description="The manifest's index in a JSON array (0-based); else null.")
    document: str | None = Field(None, description="The manifest member at fault: run, protocol, environment, …")
    message: str | None = Field(None, description="The importer's message, without the place.")


# What each error status means in this API: the descriptions of the document's answers, and the detail of an
# answer rewritten from another layer's.
STATUS_MEANINGS = {
    400: "Malformed: a NUL in the address, a body in a charset other than UTF-8, or a Host this server does not serve.",
    401: "No bearer token, or an unknown or revoked one (WWW-Authenticate says which).",
    403: "The token may not submit this run (another source or project), or a CSRF check failed.",
    404: "Nothing at this address.",
    405: "The address does not take this method (Allow lists those it takes).",
    413: "The body is larger than the limit.",
    415: "A body of a type the operation does not read.",
    422: "A parameter or the body is invalid; `field` names it.",
    429: "Too many requests with this token; Retry-After says when to try again.",
    500: "The server failed; the error is logged.",
}
# Headers an error answer carries, by status, as the document declares them.
PROBLEM_HEADERS: dict[int, dict[str, Any]] = {
    401: {
        "WWW-Authenticate": {
            "description": 'Bearer realm="KernelIndex API", with error="invalid_token" for a token sent but not valid.',
            "schema": {"type": "string"},
        }
    },
    429: {
        "Retry-After": {
            "description": "Seconds until the token's allowance starts again.",
            "required": True,
            "schema": {"type": "integer", "minimum": 0},
        }
    },
}


def is_api_request(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def problem_response(
    request: HttpRequest, status: int, detail: str, field: str | None = None, **extra: Any
) -> JsonResponse:
    """An error answer in the API's one shape; `extra` adds members (SubmissionProblem's)."""
    body = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "instance": request.path,
        "field": field,
        **extra,
    }
    return JsonResponse(body, status=status, content_type=PROBLEM_CONTENT_TYPE)


def problems(*statuses: int, model: type[Problem] = Problem) -> dict[int, type[Problem]]:
    """An operation's error answers, for ninja's `response=`: `{200: Run, **problems(404, 422)}`."""
    return dict.fromkeys(statuses, model)


def is_problem(response: HttpResponse) -> bool:
    return str(response.get("Content-Type", "")).startswith(PROBLEM_CONTENT_TYPE)


# -- the document ---------------------------------------------------------------------------------------------


def declare_problems(document: dict[str, Any], problem_ref: str) -> None:
    """Every operation's error answers as problem details: `application/problem+json`, described, with their
    headers; and the 400 any request can get before it reaches an operation (ProblemDetailsMiddleware)."""
    for operations in document["paths"].values():
        for operation in operations.values():
            responses = {str(status): answer for status, answer in operation["responses"].items()}
            responses.setdefault("400", {"content": {"application/json": {"schema": {"$ref": problem_ref}}}})
            for status, answer in responses.items():
                if int(status) >= 400:
                    _declare_problem(int(status), answer)
            operation["responses"] = dict(sorted(responses.items()))


def _declare_problem(status: int, answer: dict[str, Any]) -> None:
    answer["description"] = STATUS_MEANINGS[status]
    content = answer.get("content", {})
    if "application/json" in content:
        content[PROBLEM_CONTENT_TYPE] = content.pop("application/json")
    if headers := PROBLEM_HEADERS.get(status):
        answer["headers"] = headers


# -- the other layers' answers --------------------------------------------------------------------------------


class ProblemDetailsMiddleware:
    """Any error answer under /api/ that is not a problem yet becomes one, with its status and recovery headers.

    Those come from the layers below the API's views: the malformed-request guard (web/middleware.py), Django's
    Host check, the URL resolver, method dispatch, and server errors, as Django's handlers or, with DEBUG on, its
    technical pages answer them. A 400 is described again from the request, which says what was wrong with it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code < 400 or not is_api_request(request) or is_problem(response):
            return response
        detail, field = _refusal(request, response)
        rewritten = problem_response(request, response.status_code, detail, field)
        for header in RECOVERY_HEADERS:
            if response.has_header(header):
                rewritten[header] = response[header]
        # The answer rewritten was logged where it was made (django.utils.log.log_response marks it so): one
        # line per request, not a second for its rewrite.
        rewritten._has_been_logged = getattr(response, "_has_been_logged", False)  # type: ignore[attr-defined]
        return rewritten


def _refusal(request: HttpRequest, response: HttpResponse) -> tuple[str, str | None]:
    """What was wrong with the request, in words, and the part of it at fault."""
    status = response.status_code
    if status == 400:
        if (malformed := malformed_because(request)) is not None:
            return malformed.problem, malformed.field
        try:
            request.get_host()
        except DisallowedHost:
            return f"this server does not serve the host {request.META.get('HTTP_HOST', '')!r}", "Host"
    if status == 404:
        return f"no such API address: {request.path}", None
    if status == 405 and response.has_header("Allow"):
        return f"{request.method} is not taken here; this address takes {response['Allow']}", None
    return STATUS_MEANINGS.get(status, HTTPStatus(status).phrase), None


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """settings.CSRF_FAILURE_VIEW: the site's page, or under /api/ a problem naming the reason.

    The API's operations take bearer tokens and are exempt from CSRF; the views ninja adds beside them (the
    docs, the document) are not, so a POST to those is refused here."""
    if not is_api_request(request):
        return site_csrf_failure(request, reason)
    return problem_response(request, 403, f"CSRF verification failed: {reason}", "X-CSRFToken")
