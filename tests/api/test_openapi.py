"""The OpenAPI document: valid, and every operation in it answers as it says, on real imported data."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.test import Client
from openapi_spec_validator import validate

from runs.models import ComparisonGroup, Definition, Run
from runs.reruns import request_rerun
from tests.api.conftest import DEMO_MANIFESTS
from tests.conftest import ImportRuns

OPENAPI_URL = "/api/v1/openapi.json"
DOCS_URL = "/api/v1/docs"


@pytest.fixture
def imported(import_runs: ImportRuns, sample: Path) -> dict[str, str]:
    """Runs of every source, a definition whose name holds slashes, and a rerun: a value for each path parameter."""
    import_runs(sample / "sol-execbench" / "submissions.jsonl")
    import_runs(sample / "kernelbench")
    import_runs(DEMO_MANIFESTS)
    definition = Definition.objects.get(name="level1/1_Square_matrix_multiplication_.py")
    run = Run.objects.get(external_id="demo/rmsnorm_h2048/rmsnorm-vectorised")
    rerun = request_rerun(run, user=None, reason="check the claim")  # queued; sent only once a transaction commits
    group = ComparisonGroup.objects.filter(runs__isnull=False).first()
    assert group is not None
    return {
        "run_id": run.run_id,
        "key": group.key,
        "source": definition.source,
        "name": definition.name,
        "rerun_id": str(rerun.pk),
    }


def openapi(client: Client) -> dict[str, Any]:
    response = client.get(OPENAPI_URL)
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


def conforms(document: dict[str, Any], schema: dict[str, Any], body: Any) -> None:
    """The body against its documented schema, its references resolved in the document."""
    jsonschema.Draft202012Validator({**schema, "components": document["components"]}).validate(body)


@pytest.mark.django_db
def test_the_openapi_document_is_valid(client: Client) -> None:
    document = openapi(client)

    validate(document)
    assert document["openapi"].startswith("3.1")
    # The submission's body is the importer's own manifest schema, down to each kind's spec.
    manifest = document["components"]["schemas"]["Manifest"]
    assert manifest["required"] == ["run", "protocol", "environment"]
    assert "RunSpec" in document["components"]["schemas"]
    assert document["components"]["securitySchemes"]["BearerToken"]["scheme"] == "bearer"


def test_every_path_answers_as_documented(client: Client, imported: dict[str, str]) -> None:
    document = openapi(client)
    answered = []
    for template, operations in document["paths"].items():
        path = re.sub(r"{(\w+)}", lambda match: imported[match.group(1)], template)
        for method, operation in operations.items():
            if method == "get":
                response = client.get(path)
                assert response.status_code == 200, (path, response.content[:300])
                schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
                conforms(document, schema, response.json())
                head = client.head(path)
                assert (head.status_code, head.content) == (200, b""), path
            else:
                assert method == "post"
                response = client.post(path, "{}", content_type="application/json")
                assert response.status_code == 401, path
                assert operation["security"] == [{"BearerToken": []}]
            answered.append(f"{method} {template}")
    assert len(answered) == 7


def test_unknown_ids_get_json_404s(client: Client, imported: dict[str, str]) -> None:
    for path in (
        "/api/v1/runs/0123456789ab",
        "/api/v1/groups/sha256:nothing",
        "/api/v1/definitions/kernelbench/level1/no_such_problem.py",
        "/api/v1/reruns/987654",
        "/api/v1/reruns/99999999999999999999999999",
        "/api/v1/no/such/address",
    ):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response["Content-Type"].startswith("application/json"), path
        assert response.json()["detail"]


@pytest.mark.django_db
def test_the_docs_page_lists_every_operation_without_outside_scripts(client: Client) -> None:
    document = openapi(client)

    response = client.get(DOCS_URL)

    assert response.status_code == 200
    html = response.content.decode()
    for template, operations in document["paths"].items():
        for method in operations:
            assert f"{method.upper()} {template}" in html
    assert "Authorization: Bearer" in html
    # Each schema an operation names links to it, down to the manifest the importer reads.
    assert 'href="#schema-Submission"' in html and 'id="schema-Manifest"' in html and 'id="schema-RunSpec"' in html
    # Nothing from another origin and no inline script: it works offline and under the site's policy.
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert not re.search(r"<script(?![^>]*\bsrc=\"/static/)", html)
    assert "cdn" not in html.lower()
    assert 'href="/api/v1/docs"' in client.get("/").content.decode()
