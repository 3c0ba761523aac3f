"""`import_runs` cannot take a future rerun result's permalink either, wherever a manifest holds the id:
not from a manifest file, not from a file of JSON lines, not from a dump's runs. And once every squat was
refused, the honest rerun is recorded under the permalink it was always going to have."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from api.models import issue_token
from records.canonical import canonical_text
from records.identity import NATIVE_SOURCE, run_id_for
from records.rerun import RerunOf, rerun_external_id
from runs.models import Document, Run, RunVersion
from tests.conftest import ImportRuns
from tests.rerun_squats import SCHEMA_REFUSED, SQUATS, reported_manifest, rerun_permalink, squat, under_another_source
from tests.results import harness_result
from tests.runs import attested
from verification.models import RerunRequest
from verification.reruns import request_rerun

pytestmark = pytest.mark.usefixtures("memory_broker")
REQUEST_NUMBERS = (1, 2, 3)


def stored() -> tuple[Any, ...]:
    return (
        sorted(Run.objects.values_list("run_id", "digest")),
        RunVersion.objects.count(),
        Document.objects.count(),
    )


def permalinks_free(run: Run) -> bool:
    taken = [rerun_permalink(run.run_id, number) for number in REQUEST_NUMBERS]
    return not Run.objects.filter(run_id__in=taken).exists()


@pytest.mark.parametrize("name", SQUATS)
def test_a_squat_in_a_manifest_file_is_refused_naming_file_and_field(
    name: str, demo: Callable[[str], Run], import_runs: ImportRuns, tmp_path: Path
) -> None:
    run = demo("rmsnorm-row-loop")
    before = stored()
    for number in REQUEST_NUMBERS:
        manifest, field = squat(name, run.run_id, number)
        path = tmp_path / f"squat-{number}.json"
        path.write_text(json.dumps(manifest))

        said = import_runs(path, fails=True)

        assert f"{path}, field {field}:" in said, said
        assert "rerun/…" in said
    assert stored() == before
    assert permalinks_free(run)


@pytest.mark.parametrize("name", SQUATS)
def test_a_squat_in_a_jsonl_file_stops_the_whole_file(
    name: str, demo: Callable[[str], Run], import_runs: ImportRuns, tmp_path: Path
) -> None:
    run = demo("rmsnorm-row-loop")
    Run.objects.exclude(pk=run.pk).delete()  # so that the file's first, honest line would be new
    before = stored()
    manifest, field = squat(name, run.run_id, 1, index=1)
    path = tmp_path / "runs.jsonl"
    path.write_text(canonical_text(reported_manifest(0)) + "\n" + canonical_text(manifest) + "\n")

    said = import_runs(path, fails=True)

    assert f"{path}, line 2, field {field}:" in said, said
    assert stored() == before
    assert permalinks_free(run)


def dump_with_squat(folder: Path, run: Run, name: str) -> None:
    """The index's dump, its runs file given the squat on the run's reruns, as a dump's author can."""
    call_command("dump", out=folder, stdout=io.StringIO())
    path = folder / "runs.jsonl.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    lines += [canonical_text(squat(name, run.run_id, number)[0]) for number in REQUEST_NUMBERS]
    raw = gzip.compress("".join(line + "\n" for line in lines).encode(), mtime=0)
    path.write_bytes(raw)
    manifest = json.loads((folder / "manifest.json").read_text())
    entry = {"sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw), "lines": len(lines)}
    manifest["files"]["runs.jsonl.gz"] = entry
    (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("name", SQUATS)
def test_a_squat_in_a_dumps_runs_is_left_out_as_a_result_nothing_attests(
    name: str, demo: Callable[[str], Run], import_runs: ImportRuns, tmp_path: Path
) -> None:
    run = demo("rmsnorm-row-loop")
    dump_with_squat(tmp_path / "dump", run, name)
    before = stored()

    if name in SCHEMA_REFUSED:
        assert "runs.jsonl.gz, line" in import_runs(tmp_path / "dump", fails=True)
    else:
        said = import_runs(tmp_path / "dump")
        left_out = [line for line in said.split("; skipped ") if line.startswith("line ")]
        assert len(left_out) == len(REQUEST_NUMBERS), said
        assert all("a rerun's result that no attestation" in line for line in left_out), said

    assert stored() == before
    assert permalinks_free(run)


def test_another_sources_rerun_like_id_imports_under_a_permalink_of_its_own(
    demo: Callable[[str], Run], import_runs: ImportRuns, tmp_path: Path
) -> None:
    run = demo("rmsnorm-row-loop")
    path = tmp_path / "kernelbench.json"
    path.write_text(json.dumps(under_another_source(run.run_id, 1, "kernelbench")))

    import_runs(path)

    own = Run.objects.get(source="kernelbench", external_id=f"rerun/{run.run_id}/1")
    assert own.run_id == run_id_for("kernelbench", f"rerun/{run.run_id}/1") != rerun_permalink(run.run_id, 1)
    assert permalinks_free(run)


def test_after_every_squat_was_refused_the_rerun_is_recorded_under_its_permalink(
    demo: Callable[[str], Run], client: Client, import_runs: ImportRuns, tmp_path: Path
) -> None:
    run = demo("rmsnorm-row-loop")
    assert run.latency_ns is not None
    request = request_rerun(run, user=None)
    of = RerunOf(run.run_id, request.run_digest, "", request_id=request.pk)
    permalink = run_id_for(NATIVE_SOURCE, rerun_external_id(of))
    _, secret = issue_token("a submitter")
    for name in SQUATS:
        manifest, _ = squat(name, run.run_id, request.pk)
        response = client.post(
            "/api/v1/runs",
            json.dumps(manifest),
            content_type="application/json",
            headers={"Authorization": f"Bearer {secret}"},
        )
        assert response.status_code == 422, (name, response.content)
        path = tmp_path / "squat.json"
        path.write_text(json.dumps(manifest))
        import_runs(path, fails=True)
    assert not Run.objects.filter(run_id=permalink).exists()

    slow = harness_result(median=run.latency_ns * 20, interval=(run.latency_ns * 19, run.latency_ns * 21))
    finished = attested.finish(request, slow)

    assert finished.state == RerunRequest.State.SUCCEEDED, finished.failure_reason
    assert finished.result_run is not None and finished.result_run.run_id == permalink
    assert finished.verdict == "not_reproduced"
