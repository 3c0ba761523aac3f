"""POST /api/v1/runs: native manifests in, through the importer import_runs uses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from api import endpoints
from api.models import ApiToken, issue_token
from api.submissions import MAX_BODY_BYTES
from records import schema
from runs.models import Document, Run
from tests.api.conftest import JSONL, SUBMIT_URL, Submit, demo_lines, demo_manifest, problem_in
from tests.conftest import SEED_MANIFEST
from verification.reruns import runnable_documents

pytestmark = pytest.mark.django_db


def test_a_new_manifest_is_created_and_the_same_one_again_is_the_same_run(submit: Submit) -> None:
    manifest = demo_lines()[0]

    first = submit(manifest)
    assert first.status_code == 201, first.content
    body = first.json()
    assert body["created"] == 1
    [submitted] = body["runs"]
    run = Run.objects.get(run_id=submitted["runId"])
    assert submitted["digest"] == run.digest
    assert submitted["url"].endswith(f"/runs/{run.run_id}")

    again = submit(manifest)
    assert again.status_code == 200, again.content
    assert again.json()["unchanged"] == 1
    assert again.json()["runs"] == body["runs"]
    assert Run.objects.count() == 1
    assert run.versions.count() == 1


def test_the_submitted_run_page_shows_it_as_reported(submit: Submit, client: Client) -> None:
    response = submit(demo_lines()[0])
    url = response.json()["runs"][0]["url"]

    page = client.get(url)

    assert page.status_code == 200
    text = page.content.decode()
    assert "demo-rmsnorm-h2048-rmsnorm-vectorised" in text or "rmsnorm-vectorised" in text
    assert "Reported" in text
    run = Run.objects.get(run_id=response.json()["runs"][0]["runId"])
    assert run.evidence == Run.Evidence.REPORTED


def test_a_submission_carries_the_solution_so_a_moderator_can_rerun_it(submit: Submit) -> None:
    response = submit(demo_lines()[0])
    run = Run.objects.get(run_id=response.json()["runs"][0]["runId"])

    documents = runnable_documents(run)  # raises RerunRefusedError when there is nothing to rerun

    assert documents is not None
    implementation = Document.objects.get(digest=run.implementation_digest).value
    assert implementation["spec"]["solution"]["sources"][0]["content"].startswith("import torch")


def test_jsonl_and_arrays_of_manifests_are_imported_whole(submit: Submit) -> None:
    lines = demo_lines()
    response = submit("\n".join(lines[:3]) + "\n", content_type=JSONL)
    assert response.status_code == 201, response.content
    assert [run["line"] for run in response.json()["runs"]] == [1, 2, 3]

    array = json.dumps([json.loads(line) for line in lines[3:5]])
    response = submit(array)
    assert response.status_code == 201, response.content
    assert response.json()["created"] == 2
    assert Run.objects.count() == 5


def test_without_a_content_type_the_content_tells_json_from_jsonl(submit: Submit) -> None:
    lines = demo_lines()
    assert submit("\n".join(lines[:2]), content_type="").status_code == 201
    assert submit(json.dumps(demo_manifest(2), indent=2), content_type="text/plain").status_code == 201
    assert Run.objects.count() == 3


def test_a_bad_second_line_is_refused_naming_line_and_field_and_nothing_is_written(submit: Submit) -> None:
    bad = demo_manifest(1)
    del bad["run"]["spec"]["status"]
    body = demo_lines()[0] + "\n" + json.dumps(bad) + "\n"

    response = submit(body, content_type=JSONL)

    assert response.status_code == 422
    problem = response.json()
    assert problem["line"] == 2
    assert problem["document"] == "run"
    assert problem["field"] == "run.spec.status"
    assert "request body, line 2, field run.spec.status" in problem["detail"]
    assert Run.objects.count() == 0
    assert Document.objects.count() == 0


def test_a_manifest_whose_digests_do_not_match_is_refused_with_both_values(submit: Submit) -> None:
    manifest = demo_manifest(0)
    manifest["run"]["spec"]["protocolDigest"] = "sha256:" + "0" * 64

    response = submit(json.dumps(manifest))

    assert response.status_code == 422
    assert response.json()["field"] == "run.spec.protocolDigest"
    assert "sha256:" + "0" * 64 in response.json()["message"]
    assert not Run.objects.exists()


def test_a_manifest_with_foreign_digests_is_stored_under_ours_when_asked(client: Client) -> None:
    """The seed: a SOL-ExecBench run whose declared digests were made by another recipe."""
    _, secret = issue_token("sol mirror", source="sol-execbench")
    headers = {"Authorization": f"Bearer {secret}"}
    seed = SEED_MANIFEST.read_text()

    refused = client.post(SUBMIT_URL, seed, content_type="application/json", headers=headers)
    assert refused.status_code == 422
    assert refused.json()["field"] == "run.spec.protocolDigest"

    stored = client.post(f"{SUBMIT_URL}?redigest=true", seed, content_type="application/json", headers=headers)
    assert stored.status_code == 201, stored.content
    run = Run.objects.get(run_id=stored.json()["runs"][0]["runId"])
    assert run.declared_digests["protocol"].startswith("sha256:2964c5c4")


def test_a_hardware_whose_architecture_is_null_is_stored(client: Client, token: tuple[ApiToken, str]) -> None:
    """The schema allows `architecture: null`; the import used to fail on it with a 500 (found by Schemathesis)."""
    manifest = demo_manifest(0)
    manifest["environment"]["spec"]["hardware"]["architecture"] = None
    headers = {"Authorization": f"Bearer {token[1]}"}

    response = client.post(f"{SUBMIT_URL}?redigest=true", json.dumps(manifest), "application/json", headers=headers)

    assert response.status_code == 201, response.content
    run = Run.objects.get(run_id=response.json()["runs"][0]["runId"])
    assert run.group is not None and run.group.architecture == ""


def test_a_reference_to_a_stored_document_of_another_kind_is_not_served_as_one(
    client: Client, token: tuple[ApiToken, str]
) -> None:
    """A run may refer to documents it does not carry; one whose implementationDigest named a stored protocol
    was served with that protocol as its implementation (found by Schemathesis)."""
    headers = {"Authorization": f"Bearer {token[1]}"}
    stored = client.post(SUBMIT_URL, demo_lines()[0], "application/json", headers=headers).json()["runs"][0]
    protocol_digest = Run.objects.get(run_id=stored["runId"]).protocol_digest
    manifest = demo_manifest(1)
    del manifest["implementation"]
    manifest["run"]["spec"]["implementationDigest"] = protocol_digest

    response = client.post(SUBMIT_URL, json.dumps(manifest), "application/json", headers=headers)

    assert response.status_code == 201, response.content
    served = client.get(f"/api/v1/runs/{response.json()['runs'][0]['runId']}").json()["manifest"]
    assert served["run"]["spec"]["implementationDigest"] == protocol_digest
    assert "implementation" not in served


@pytest.mark.parametrize("role", ["run", "protocol", "environment"])
def test_a_required_document_that_is_null_is_refused_as_missing(submit: Submit, role: str) -> None:
    """`"environment": null` passed the check for a missing document and failed later with a 500 (found by
    Schemathesis)."""
    manifest = demo_manifest(0)
    manifest[role] = None

    response = submit(json.dumps([manifest]))

    refused = problem_in(response, 422)
    assert (refused["field"], refused["manifest"]) == (f"[0].{role}", 0)
    assert "missing" in refused["message"]


@pytest.mark.parametrize(
    ("observed_at", "words"),
    [
        ("2026-04-20T20:30:41", "must carry a timezone"),
        ("9999-12-31T23:59:59-23:59", "between -12:00 and +14:00"),
        ("0001-01-01T00:00:00+14:00", "between the years 1 and 9999 in UTC"),
    ],
)
def test_a_time_no_time_zone_has_or_outside_the_calendar_is_refused(
    submit: Submit, client: Client, observed_at: str, words: str
) -> None:
    """Such times were stored (or failed to be, with a 500), and a run stored before year 1 in UTC made every
    list that held it fail with a 500 (found by Schemathesis)."""
    manifest = demo_manifest(0)
    manifest["run"]["spec"]["observedAt"] = observed_at

    refused = problem_in(submit(json.dumps(manifest)), 422)

    assert refused["field"] == "run.spec.observedAt"
    assert words in refused["message"]
    assert client.get("/api/v1/runs").json()["runs"] == []


# Fields the index keeps in columns of their own, and their lengths (records.schema, runs.models); with whether
# a value of exactly that length can be stored by a kernelindex token (a source of 32 characters is another
# source's; a primary statistic names a figure of the timing too).
INDEXED_FIELDS = [
    ("environment.spec.hardware.product", schema.PRODUCT_MAX_LENGTH, True),
    ("environment.spec.hardware.architecture", schema.ARCHITECTURE_MAX_LENGTH, True),
    ("protocol.spec.comparability.family", schema.FAMILY_MAX_LENGTH, True),
    ("protocol.spec.harness.name", schema.HARNESS_MAX_LENGTH, True),
    ("protocol.spec.harness.version", schema.HARNESS_VERSION_MAX_LENGTH, True),
    ("protocol.spec.measurement.primaryStatistic", schema.STATISTIC_MAX_LENGTH, True),
    ("workload.spec.definition.source", schema.SOURCE_MAX_LENGTH, True),
    ("workload.spec.definition.name", schema.DEFINITION_NAME_MAX_LENGTH, True),
    ("workload.spec.definition.id", schema.DEFINITION_ID_MAX_LENGTH, True),
    ("run.spec.sourceNative.externalId", schema.EXTERNAL_ID_MAX_LENGTH, True),
    ("run.spec.sourceNative.source", schema.SOURCE_MAX_LENGTH, False),
    ("run.spec.timing.primaryStatistic", schema.STATISTIC_MAX_LENGTH, False),
]


def with_value(manifest: dict[str, Any], field: str, value: str) -> dict[str, Any]:
    *parents, name = field.split(".")
    holder = manifest
    for parent in parents:
        holder = holder[parent]
    holder[name] = value
    return manifest


@pytest.mark.parametrize(("field", "longest", "storable"), INDEXED_FIELDS, ids=[f[0] for f in INDEXED_FIELDS])
def test_a_value_longer_than_the_index_keeps_is_refused_naming_its_field(
    submit: Submit, field: str, longest: int, storable: bool
) -> None:
    """Such values failed where they were stored, with a 500, though the schema let them through (found by
    Schemathesis's boundary values, tried by hand)."""
    too_long = with_value(demo_manifest(0), field, "x" * (longest + 1))
    refused = problem_in(submit(json.dumps(too_long), "application/json", redigest=True), 422)
    assert refused["field"] == field
    if storable:
        longest_kept = with_value(demo_manifest(0), field, "x" * longest)
        assert submit(json.dumps(longest_kept), "application/json", redigest=True).status_code == 201
    assert Run.objects.count() == int(storable)


def test_the_array_index_of_a_bad_manifest_is_named(submit: Submit) -> None:
    bad = demo_manifest(1)
    bad["environment"]["spec"]["hardware"] = {}
    response = submit(json.dumps([demo_manifest(0), bad]))

    assert response.status_code == 422
    assert response.json()["manifest"] == 1
    assert response.json()["document"] == "environment"
    assert response.json()["field"].startswith("[1].environment.spec.hardware")
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("body", "content_type", "status", "words"),
    [
        (b'{"run": ', "application/json", 422, "not valid JSON"),
        (b'{"run": "\xff\xfe"}', "application/json", 422, "utf-8"),
        (b"", "application/json", 422, "empty"),
        (b"[1, 2]", "application/json", 422, "a manifest is a JSON object"),
        (b"42", "application/json", 422, "expected a manifest object"),
        (b"run=1", "application/x-www-form-urlencoded", 415, "application/x-ndjson"),
        (b"<manifest/>", "application/xml", 415, "application/json"),
        (b"[" * 100 + b"]" * 100, "application/json", 422, "nested deeper"),
        (b'{"run": "\\u0000"}', "application/json", 422, "NUL"),
        (b'{"run": "' + b"x" * (4 * 1024 * 1024) + b'"}\n{}', JSONL, 422, "the limit for a line"),
    ],
)
def test_bad_bodies_get_a_json_error_never_a_server_error(
    submit: Submit, body: bytes, content_type: str, status: int, words: str
) -> None:
    response = submit(body, content_type=content_type)

    assert words in problem_in(response, status)["detail"]
    assert not Run.objects.exists()


def test_a_parameter_of_the_wrong_type_is_said_in_words(client: Client, token: tuple[ApiToken, str]) -> None:
    headers = {"Authorization": f"Bearer {token[1]}"}
    response = client.post(
        f"{SUBMIT_URL}?redigest=perhaps", demo_lines()[0], content_type="application/json", headers=headers
    )

    assert response.status_code == 422
    assert response.json()["detail"].startswith("redigest:")
    assert not Run.objects.exists()
    assert client.get("/api/v1/reruns/first").json()["detail"].startswith("rerun_id:")


def test_a_body_in_another_charset_is_refused_before_it_is_read(submit: Submit) -> None:
    # The test client encodes a text body in the charset named.
    response = submit(demo_lines()[0], content_type="application/json; charset=latin-1")

    assert response.status_code == 400
    assert not Run.objects.exists()


def test_a_body_over_the_limit_is_refused_unread(submit: Submit) -> None:
    response = submit(b" " * (MAX_BODY_BYTES + 1))

    assert response.status_code == 413
    assert str(MAX_BODY_BYTES) in response.json()["detail"]


def test_no_token_or_a_revoked_or_unknown_one_gets_401(submit: Submit, token: tuple[ApiToken, str]) -> None:
    manifest = demo_lines()[0]

    missing = submit(manifest, secret=None)
    assert missing.status_code == 401
    assert missing["WWW-Authenticate"].startswith("Bearer")

    assert submit(manifest, secret="ki_not-a-token").status_code == 401
    basic = Client().post(
        SUBMIT_URL, manifest, content_type="application/json", headers={"Authorization": "Basic eDp5"}
    )
    assert basic.status_code == 401

    token[0].revoke()
    revoked = submit(manifest)
    assert revoked.status_code == 401
    assert 'error="invalid_token"' in revoked["WWW-Authenticate"]
    assert not Run.objects.exists()


def test_a_token_for_another_source_gets_403(submit: Submit) -> None:
    _, other = issue_token("sol submitter", source="sol-execbench")

    response = submit(demo_lines()[0], secret=other)

    assert response.status_code == 403
    assert "sol-execbench" in response.json()["detail"]
    assert response.json()["field"] == "run.spec.sourceNative.source"
    assert not Run.objects.exists()


def test_a_token_for_another_project_gets_403(submit: Submit) -> None:
    _, other = issue_token("flashinfer team", project="flashinfer")

    response = submit(demo_lines()[0], secret=other)

    assert response.status_code == 403
    assert "flashinfer" in response.json()["detail"]
    assert response.json()["field"] == "implementation.spec.project"
    # A manifest in an array is named by its index.
    array = json.dumps([demo_manifest(0), demo_manifest(1)])
    assert submit(array, secret=other).json()["field"] == "[0].implementation.spec.project"


def test_over_the_rate_limit_gets_429_with_retry_after(
    submit: Submit, settings: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.API_SUBMISSIONS_PER_HOUR = 2  # type: ignore[attr-defined]
    window = endpoints.RATE_WINDOW_SECONDS
    # The middle of one window, so the requests cannot straddle two.
    monkeypatch.setattr(endpoints.ratelimit, "_now", lambda: 1_000_000 * window + 600.0)
    lines = demo_lines()
    assert submit(lines[0]).status_code == 201
    assert submit(lines[1]).status_code == 201

    refused = submit(lines[2])

    assert refused.status_code == 429
    assert refused["Retry-After"] == str(window - 600)
    assert Run.objects.count() == 2
    # Another token has an allowance of its own.
    _, other = issue_token("second submitter")
    assert submit(lines[2], secret=other).status_code == 201


def test_a_token_is_marked_as_used(submit: Submit, token: tuple[ApiToken, str]) -> None:
    assert token[0].last_used_at is None
    submit(demo_lines()[0])
    token[0].refresh_from_db()
    assert token[0].last_used_at is not None


def test_get_is_not_a_submission(client: Client) -> None:
    assert client.get(SUBMIT_URL).status_code == 200
    assert client.put(SUBMIT_URL, "{}", content_type="application/json").status_code == 405
