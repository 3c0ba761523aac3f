"""Every error under /api/ is RFC 9457 problem details, whichever layer answered it; outside /api/ pages stay HTML.

The first test walks the OpenAPI document, so an operation added without declaring its errors (api/problems.py's
`problems(...)`) fails it the day it is added.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from api import endpoints
from api.models import issue_token
from api.submissions import MAX_BODY_BYTES
from tests.api.conftest import PROBLEM_JSON, SUBMIT_URL, Submit, demo_lines, problem_in

pytestmark = pytest.mark.django_db
PROBLEM_REF = "#/components/schemas/Problem"


def declared_problem(document: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Whether a response schema is the Problem schema, or one with all its members (SubmissionProblem)."""
    if schema.get("$ref") == PROBLEM_REF:
        return True
    named = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    problem = document["components"]["schemas"]["Problem"]
    return set(problem["properties"]) <= set(named["properties"]) and set(problem["required"]) <= set(named["required"])


def test_every_operation_declares_its_errors_as_problem_details(client: Client) -> None:
    document = client.get("/api/v1/openapi.json").json()
    operations = [(method, path, item) for path, items in document["paths"].items() for method, item in items.items()]
    assert len(operations) >= 6
    for method, path, operation in operations:
        where = f"{method.upper()} {path}"
        errors = {int(status): answer for status, answer in operation["responses"].items() if int(status) >= 400}
        expected = {400}
        if operation.get("parameters") or operation.get("requestBody"):
            expected.add(422)
        if operation.get("security"):
            expected.add(401)
        assert expected <= set(errors), where
        for status, answer in errors.items():
            assert list(answer["content"]) == [PROBLEM_JSON], (where, status)
            assert declared_problem(document, answer["content"][PROBLEM_JSON]["schema"]), (where, status)
            assert answer["description"], (where, status)
        if 429 in errors:
            assert errors[429]["headers"]["Retry-After"]["schema"]["type"] == "integer", where
        if 401 in errors:
            assert "WWW-Authenticate" in errors[401]["headers"], where


# Each request a part of the stack refuses under /api/: (what, how to send it, its status, the field it names).
Send = Callable[[Client, Submit], Any]
REFUSALS: list[tuple[str, Send, int, str | None]] = [
    ("NUL in the query (the malformed-request guard)", lambda c, s: c.get("/api/v1/runs", {"q": "a\x00"}), 400, "q"),
    ("NUL in the path", lambda c, s: c.get("/api/v1/runs/%00"), 400, None),
    ("bytes that are not UTF-8 in an id", lambda c, s: c.get("/api/v1/runs/%FF%FE"), 422, "run_id"),
    (
        "a body in another charset",
        lambda c, s: s(demo_lines()[0], content_type="application/json; charset=latin-1"),
        400,
        "Content-Type",
    ),
    ("a Host not served (Django)", lambda c, s: c.get("/api/v1/runs", headers={"Host": "evil.example"}), 400, "Host"),
    ("no token", lambda c, s: s(demo_lines()[0], secret=None), 401, "Authorization"),
    ("an unknown token", lambda c, s: s(demo_lines()[0], secret="ki_nothing"), 401, "Authorization"),
    (
        "a run outside the token's scope",
        lambda c, s: s(demo_lines()[0], secret=issue_token("sol", source="sol-execbench")[1]),
        403,
        "run.spec.sourceNative.source",
    ),
    ("CSRF (Django's check, on ninja's docs page)", lambda c, s: c.post("/api/v1/docs"), 403, "X-CSRFToken"),
    ("an unknown id", lambda c, s: c.get("/api/v1/runs/0123456789ab"), 404, None),
    ("an unknown address under /api/v1/", lambda c, s: c.post("/api/v1/no/such/thing"), 404, None),
    ("an unknown address under /api/ (the URL resolver)", lambda c, s: c.get("/api/v2/runs"), 404, None),
    ("a method an operation does not take (ninja)", lambda c, s: c.delete("/api/v1/runs"), 405, None),
    ("a method the docs do not take (Django)", lambda c, s: c.put("/api/v1/"), 405, None),
    ("a body over the limit", lambda c, s: s(b" " * (MAX_BODY_BYTES + 1)), 413, None),
    ("a body of another type", lambda c, s: s("<run/>", content_type="application/xml"), 415, "Content-Type"),
    ("a parameter of the wrong type (ninja)", lambda c, s: c.get("/api/v1/reruns/first"), 422, "rerun_id"),
    ("a number out of its range (ninja)", lambda c, s: c.get("/api/v1/runs", {"limit": 0}), 422, "limit"),
    ("a body that is not JSON (the importer)", lambda c, s: s('{"run": '), 422, None),
    ("a manifest missing a document (the importer)", lambda c, s: s('{"run": {}}'), 422, "protocol"),
]


@pytest.mark.parametrize("debug", [False, True], ids=["production", "DEBUG"])
@pytest.mark.parametrize(("what", "send", "status", "field"), REFUSALS, ids=[refusal[0] for refusal in REFUSALS])
def test_every_refusal_under_the_api_is_a_problem(
    client: Client, submit: Submit, settings: Any, debug: bool, what: str, send: Send, status: int, field: str | None
) -> None:
    settings.DEBUG = debug

    problem = problem_in(send(client, submit), status)

    assert problem["field"] == field


def test_a_refusal_keeps_the_headers_that_say_how_to_recover(
    client: Client, submit: Submit, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong_method = client.delete("/api/v1/runs")
    allowed = wrong_method["Allow"]  # in ninja's order, which varies between processes
    assert sorted(allowed.split(", ")) == ["GET", "POST"]
    assert problem_in(wrong_method, 405)["detail"] == f"DELETE is not taken here; this address takes {allowed}"
    assert client.post(SUBMIT_URL, "{}", content_type="application/json")["WWW-Authenticate"].startswith("Bearer")

    settings.API_SUBMISSIONS_PER_HOUR = 1
    window = endpoints.RATE_WINDOW_SECONDS
    monkeypatch.setattr(endpoints.ratelimit, "_now", lambda: 1_000_000 * window + 600.0)
    submit(demo_lines()[0])
    refused = submit(demo_lines()[1])
    problem_in(refused, 429)
    assert refused["Retry-After"] == str(window - 600)


def test_a_query_string_that_is_not_utf8_is_read_not_refused(client: Client) -> None:
    """Django reads undecodable bytes as U+FFFD; the search finds nothing, in JSON like any other."""
    response = client.get("/api/v1/runs?q=%FF%FE&gpu=%C3%28")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response.json()["runs"] == []


def test_a_refusal_to_head_has_no_body(client: Client) -> None:
    for path in ("/api/v1/runs/0123456789ab", "/api/v1/runs/%00", "/api/v2/runs"):
        response = client.head(path)
        assert response["Content-Type"] == PROBLEM_JSON, path
        assert response.status_code in {400, 404} and response.content == b"", path


@pytest.mark.parametrize("debug", [False, True], ids=["production", "DEBUG"])
def test_outside_the_api_the_site_answers_with_its_pages(client: Client, settings: Any, debug: bool) -> None:
    settings.DEBUG = debug
    for response, status in (
        (client.get("/", {"q": "a\x00"}), 400),
        (client.get("/", headers={"Host": "evil.example"}), 400),
        (client.get("/no/such/page"), 404),
        (client.post("/runs/0123456789ab/notes"), 403),
    ):
        assert response.status_code == status
        assert response["Content-Type"].startswith("text/html"), response.wsgi_request.path
