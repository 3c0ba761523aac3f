"""Fixtures for the API: tokens, and a client that submits manifests with one."""

from __future__ import annotations

import json
from collections.abc import Callable
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
    """POST a body to /api/v1/runs with the token (or `secret=`, None for no Authorization header)."""

    def post(body: str | bytes, content_type: str = "application/json", secret: str | None = token[1]) -> Any:
        headers = {"Authorization": f"Bearer {secret}"} if secret is not None else {}
        return client.post(SUBMIT_URL, body, content_type=content_type, headers=headers)

    return post
