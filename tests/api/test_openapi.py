"""The OpenAPI document: valid, and every operation in it answers as it says, on real imported data."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.test import Client
from openapi_spec_validator import validate

from api.models import ApiToken
from runs.models import ComparisonGroup, Definition, Run
from tests.api.conftest import DEMO_MANIFESTS, SUBMIT_URL, demo_manifest, problem_in
from tests.conftest import ImportRuns
from verification.reruns import request_rerun

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


def test_unknown_ids_get_404_and_malformed_ones_422_naming_the_parameter(
    client: Client, imported: dict[str, str]
) -> None:
    for path in (
        "/api/v1/runs/0123456789ab",
        "/api/v1/groups/sha256:" + "0" * 64,
        "/api/v1/definitions/kernelbench/level1/no_such_problem.py",
        "/api/v1/reruns/987654",
        "/api/v1/no/such/address",
    ):
        problem_in(client.get(path), 404)
    for path, field in (
        ("/api/v1/runs/0123456789AB", "run_id"),
        ("/api/v1/groups/sha256:nothing", "key"),
        ("/api/v1/definitions/nowhere/level1/no_such_problem.py", "source"),
        ("/api/v1/reruns/99999999999999999999999999", "rerun_id"),
        ("/api/v1/reruns/0", "rerun_id"),
    ):
        assert problem_in(client.get(path), 422)["field"] == field, path


def test_each_filter_says_the_values_the_server_takes(client: Client, imported: dict[str, str]) -> None:
    parameters = {
        item["name"]: item["schema"] for item in openapi(client)["paths"]["/api/v1/runs"]["get"]["parameters"]
    }

    for name in ("source", "evidence"):
        for value in parameters[name]["enum"]:
            assert client.get("/api/v1/runs", {name: value, "limit": 1}).status_code == 200, (name, value)
        assert problem_in(client.get("/api/v1/runs", {name: "Commodore 64"}), 422)["field"] == name
    # The hardware is not a closed set (each source adds its own): any product of at most its length, no NUL.
    assert "enum" not in parameters["gpu"]
    for name in ("q", "gpu"):
        longest = parameters[name]["maxLength"]
        assert client.get("/api/v1/runs", {name: "x" * longest}).status_code == 200, name
        assert problem_in(client.get("/api/v1/runs", {name: "x" * (longest + 1)}), 422)["field"] == name
        assert re.fullmatch(parameters[name]["pattern"], "a\x00b") is None
        assert problem_in(client.get("/api/v1/runs", {name: "a\x00b"}), 400)["field"] == name


@pytest.mark.django_db
def test_a_manifest_is_valid_by_the_document_as_far_as_a_schema_can_say(
    client: Client, token: tuple[ApiToken, str]
) -> None:
    """The document's Manifest schema holds the records' patterns: what it refuses the importer refuses too."""
    document = openapi(client)
    manifest_schema = {"$ref": "#/components/schemas/Manifest"}
    manifest = demo_manifest(0)
    conforms(document, manifest_schema, manifest)

    manifest["run"]["spec"]["protocolDigest"] = "sha256:" + "A" * 64
    with pytest.raises(jsonschema.ValidationError, match="does not match"):
        conforms(document, manifest_schema, manifest)
    headers = {"Authorization": f"Bearer {token[1]}"}
    refused = client.post(SUBMIT_URL, json.dumps(manifest), content_type="application/json", headers=headers)
    assert problem_in(refused, 422)["field"] == "run.spec.protocolDigest"


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
