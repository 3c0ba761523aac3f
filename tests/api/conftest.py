"""Fixtures for the API: tokens, and a client that submits manifests with one."""

from __future__ import annotations

import json
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from api.models import ApiToken, issue_token

ROOT = Path(__file__).resolve().parent.parent.parent
# Native manifests with their Workload and Implementation (the solution's sources): runs a moderator can rerun.
DEMO_MANIFESTS = ROOT / "demo" / "runs" / "reported.jsonl"
SUBMIT_URL = "/api/v1/runs"
JSONL = "application/x-ndjson"
PROBLEM_JSON = "application/problem+json"


def demo_lines() -> list[str]:
    return [line for line in DEMO_MANIFESTS.read_text().splitlines() if line.strip()]


def demo_manifest(index: int = 0) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(demo_lines()[index])
    return value


@pytest.fixture
def client() -> Client:
    """CSRF is checked as in production: a bearer-token call must pass without a CSRF token."""
    return Client(enforce_csrf_checks=True)


@pytest.fixture
def token(db: None) -> tuple[ApiToken, str]:
    """A token for KernelIndex's own source (native manifests), and its secret."""
    return issue_token("demo submitter")


Submit = Callable[..., Any]


@pytest.fixture
def submit(client: Client, token: tuple[ApiToken, str]) -> Submit:
    """POST a body to /api/v1/runs with the token (or `secret=`, None for no Authorization header), with
    `redigest=True` as ?redigest=true."""

    def post(
        body: str | bytes, content_type: str = "application/json", secret: str | None = token[1], redigest: bool = False
    ) -> Any:
        headers = {"Authorization": f"Bearer {secret}"} if secret is not None else {}
        url = f"{SUBMIT_URL}?redigest=true" if redigest else SUBMIT_URL
        return client.post(url, body, content_type=content_type, headers=headers)

    return post


def problem_in(response: Any, status: int) -> dict[str, Any]:
    """The body of an error answer in the API's one shape, RFC 9457 problem details, checked member by member."""
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"] == PROBLEM_JSON, response.content[:500]
    problem: dict[str, Any] = json.loads(response.content)
    assert problem["type"] == "about:blank"
    assert problem["title"] == HTTPStatus(status).phrase
    assert problem["status"] == status
    assert isinstance(problem["detail"], str) and problem["detail"]
    assert problem["instance"] == response.wsgi_request.path
    assert problem["field"] is None or isinstance(problem["field"], str)
    return problem
