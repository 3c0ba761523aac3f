"""Issue 23's forgeries: a rerun's result is its worker's attested measurement, and nobody else's to write.

Each manifest shaped like a rerun's result (the rerun/ namespace, rerunOf, the KernelIndex harness's
protocol) is refused through the API with a 422 naming the field, and by `import_runs` naming the file and
field; nothing of it is stored. Whatever is written meanwhile, `reevaluate` gives the verdict the worker's
signed attestation supports.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from api.models import issue_token
from records.canonical import canonical_text, digest
from records.schema import REFERENCE_FIELDS
from runs.models import Document, Run, RunVersion
from tests.conftest import ImportRuns
from tests.results import harness_result
from tests.runs import attested
from tests.runs.conftest import demo_manifest_parts
from verification.models import RerunRequest
from verification.reruns import request_rerun

pytestmark = pytest.mark.usefixtures("memory_broker")


def with_reference_digests(manifest: dict[str, Any]) -> dict[str, Any]:
    """The run pointed at its documents' digests again, after a test changed one."""
    for role, field in REFERENCE_FIELDS.items():
        if manifest.get(role) is not None:
            manifest["run"]["spec"][field] = digest(manifest[role])
    return manifest


def forged_new_result(run: Run, request_number: int) -> dict[str, Any]:
    """A reported demo manifest, moved into the rerun namespace as the next rerun's result would be."""
    manifest = copy.deepcopy(demo_manifest_parts())
    manifest["run"]["spec"]["sourceNative"]["externalId"] = f"rerun/{run.run_id}/{request_number}"
    return manifest


def with_rerun_of(run: Run) -> dict[str, Any]:
    manifest = copy.deepcopy(demo_manifest_parts())
    manifest["run"]["spec"]["sourceNative"]["externalId"] = "tests/claims-to-be-a-rerun"
    manifest["run"]["spec"]["rerunOf"] = {"runId": run.run_id, "digest": run.digest}
    return manifest


def with_harness_protocol(result: dict[str, Any]) -> dict[str, Any]:
    """A run of its own, measured (it says) by KernelIndex's harness under its rerun protocol."""
    manifest = copy.deepcopy(demo_manifest_parts())
    manifest["run"]["spec"]["sourceNative"]["externalId"] = "tests/measured-by-kernelindex"
    manifest["protocol"] = copy.deepcopy(result["protocol"])
    return with_reference_digests(manifest)


def over_the_result(result: dict[str, Any], reported_ns: float) -> dict[str, Any]:
    """The worker-made result run, its figures made to reproduce the claim ("updated 1")."""
    manifest = {role: copy.deepcopy(result[role]) for role in ("run", "protocol", "environment", "workload")}
    manifest["implementation"] = copy.deepcopy(result["implementation"])
    manifest["run"]["spec"]["timing"]["latencyNs"]["median"] = reported_ns
    for case in manifest["run"]["spec"]["cases"]:
        case["speedup"] = 1000.0
    return manifest


def post(client: Client, secret: str, manifest: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {secret}"}
    return client.post("/api/v1/runs", json.dumps(manifest), content_type="application/json", headers=headers)


def stored() -> tuple[Any, ...]:
    return (
        Run.objects.count(),
        RunVersion.objects.count(),
        Document.objects.count(),
        sorted(Run.objects.values_list("run_id", "digest", "evidence")),
        sorted(RerunRequest.objects.values_list("pk", "state", "verdict", "result_run")),
    )


@pytest.fixture
def decided(demo: Callable[[str], Run], client: Client) -> dict[str, Any]:
    """The demo's too-fast run, not reproduced by an attested rerun; its result run's manifest as published."""
    run = demo("rmsnorm-row-loop")
    assert run.latency_ns is not None
    slow = harness_result(median=run.latency_ns * 20, interval=(run.latency_ns * 19, run.latency_ns * 21))
    request = attested.finish(request_rerun(run, user=None), slow)
    assert request.result_run is not None
    run.refresh_from_db()
    assert (request.verdict, run.evidence) == ("not_reproduced", "not_reproduced")
    published = client.get(f"/runs/{request.result_run.run_id}.json").json()
    return {"run": run, "request": request, "result": published}


def forgeries(decided: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str]]:
    """Each forgery, and the field its refusal names."""
    run, request, result = decided["run"], decided["request"], decided["result"]
    assert run.latency_ns is not None
    return {
        "next result": (forged_new_result(run, request.pk + 1), "run.spec.sourceNative.externalId"),
        "over the result": (over_the_result(result, run.latency_ns), "run.spec.rerunOf"),
        "the result again": (
            {role: result[role] for role in ("run", "protocol", "environment", "workload", "implementation")},
            "run.spec.rerunOf",
        ),
        "rerunOf": (with_rerun_of(run), "run.spec.rerunOf"),
        "harness protocol": (with_harness_protocol(result), "protocol.spec.harness.name"),
    }


def test_each_forgery_is_refused_through_the_api_naming_its_field(decided: dict[str, Any], client: Client) -> None:
    _, secret = issue_token("a submitter")
    before = stored()
    for name, (manifest, field) in forgeries(decided).items():
        response = client.post(
            "/api/v1/runs",
            json.dumps(manifest),
            content_type="application/json",
            headers={"Authorization": f"Bearer {secret}"},
        )
        assert response.status_code == 422, (name, response.content)
        assert response.json()["field"] == field, name
        assert "rerun" in response.json()["message"], name
        assert stored() == before, name


def test_each_forgery_is_refused_by_import_runs_naming_file_and_field(
    decided: dict[str, Any], import_runs: ImportRuns, tmp_path: Path
) -> None:
    before = stored()
    for index, (name, (manifest, field)) in enumerate(forgeries(decided).items()):
        path = tmp_path / f"forgery-{index}.json"
        path.write_text(json.dumps(manifest))
        said = import_runs(path, fails=True)
        assert f"{path}, field {field}:" in said, (name, said)
        assert stored() == before, name
    # In a file of many manifests, the forged line stops the whole file.
    lines = [canonical_text(demo_manifest_parts() | {}), canonical_text(forgeries(decided)["rerunOf"][0])]
    (tmp_path / "mixed.jsonl").write_text("\n".join(lines) + "\n")
    assert "line 2, field run.spec.rerunOf" in import_runs(tmp_path / "mixed.jsonl", fails=True)
    assert stored() == before


def test_reevaluate_gives_the_attested_verdict_whatever_was_written(
    decided: dict[str, Any], client: Client, import_runs: ImportRuns, tmp_path: Path
) -> None:
    run, request = decided["run"], decided["request"]
    _, secret = issue_token("a submitter")
    for manifest, _ in forgeries(decided).values():
        client.post(
            "/api/v1/runs",
            json.dumps(manifest),
            content_type="application/json",
            headers={"Authorization": f"Bearer {secret}"},
        )
    # Even a version written to the result run behind the importer's back changes nothing the rule reads.
    forged = over_the_result(decided["result"], run.latency_ns or 1.0)
    forged_run = with_reference_digests(forged)["run"]
    Document.objects.create(
        digest=digest(forged_run), kind="BenchmarkRun", name="forged", canonical=canonical_text(forged_run)
    )
    Run.objects.filter(pk=request.result_run_id).update(digest=digest(forged_run))
    Run.objects.filter(pk=run.pk).update(evidence="reproduced")
    RerunRequest.objects.filter(pk=request.pk).update(verdict="reproduced", verdict_reason="forged")

    out = io.StringIO()
    call_command("reevaluate", run.run_id, stdout=out)
    run.refresh_from_db()
    request.refresh_from_db()
    assert (request.verdict, run.evidence) == ("not_reproduced", "not_reproduced"), out.getvalue()
    assert "reported figure" in request.verdict_reason or "speedup" in request.verdict_reason
