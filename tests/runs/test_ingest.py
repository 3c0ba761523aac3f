"""The import service on files larger than one batch: repeats, versions and idempotence across batches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from runs import ingest
from runs.models import Document, Run, RunVersion
from tests.conftest import ImportRuns
from tests.pages import write_jsonl

SOL_SUBMISSIONS = "sol-execbench/submissions.jsonl"


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three runs a batch, so that the sample's eight submissions span three batches."""
    monkeypatch.setattr(ingest, "BATCH_SIZE", 3)


def plain_records(sample: Path) -> list[dict[str, Any]]:
    """The sample submissions as the leaderboard API serves them: no client `event` key."""
    lines = (sample / SOL_SUBMISSIONS).read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "event"} for line in lines]


def stored() -> dict[str, Any]:
    return {
        "runs": sorted(Run.objects.values_list("run_id", "digest", "group_id", "definition_id")),
        "versions": sorted(RunVersion.objects.values_list("run__run_id", "digest", "source_line")),
        "documents": sorted(Document.objects.values_list("digest", flat=True)),
    }


@pytest.mark.usefixtures("small_batches")
def test_a_file_of_many_batches_imports_whole_and_again_changes_nothing(
    import_runs: ImportRuns, sample: Path, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "submissions.jsonl", plain_records(sample))
    assert "8 runs (8 new, 0 updated, 0 unchanged)" in import_runs(path)
    first = stored()
    assert sorted(line for *_, line in first["versions"]) == list(range(1, 9))
    assert "8 runs (0 new, 0 updated, 8 unchanged)" in import_runs(path)
    assert stored() == first


@pytest.mark.usefixtures("small_batches")
def test_the_same_submission_twice_with_the_same_content_is_one_run(
    import_runs: ImportRuns, sample: Path, tmp_path: Path
) -> None:
    records = plain_records(sample)
    import_runs(write_jsonl(tmp_path / "twice.jsonl", [*records, records[0]]))
    assert Run.objects.count() == 8
    assert RunVersion.objects.count() == 8


@pytest.mark.usefixtures("small_batches")
def test_a_repeat_with_other_content_in_a_later_batch_names_both_lines_and_the_id_field(
    import_runs: ImportRuns, sample: Path, tmp_path: Path
) -> None:
    records = plain_records(sample)
    path = write_jsonl(tmp_path / "twice.jsonl", [*records, records[1] | {"sol_score": 0.5}])
    output = import_runs(path, fails=True)
    assert f"error: {path}, line 9, field id: sol-execbench record '18189' is also on line 2" in output
    assert "nothing from" in output
    assert not Run.objects.exists() and not Document.objects.exists()


@pytest.mark.usefixtures("small_batches")
def test_a_stored_older_version_repeated_later_in_the_file_is_still_a_repeat(
    import_runs: ImportRuns, sample: Path, tmp_path: Path
) -> None:
    records = plain_records(sample)
    import_runs(write_jsonl(tmp_path / "old.jsonl", records))
    # Line 1 changes submission 18134; line 9 brings back the version already stored.
    changed = [records[0] | {"sol_score": 0.85}, *records[1:], records[0]]
    output = import_runs(write_jsonl(tmp_path / "new.jsonl", changed), fails=True)
    assert "line 9, field id: sol-execbench record '18134' is also on line 1 with different content" in output
    assert Run.objects.get(external_id="18134").versions.count() == 1


def test_a_repeated_manifest_names_the_manifest_field(import_runs: ImportRuns, sample: Path, tmp_path: Path) -> None:
    import_runs(sample / SOL_SUBMISSIONS)
    export = tmp_path / "export.jsonl"
    call_command("export_runs", out=export, stderr=None)
    manifest = json.loads(export.read_text().splitlines()[0])
    other = json.loads(json.dumps(manifest))
    other["run"]["spec"]["sourceNative"]["metrics"]["sol_score"] = 0.5
    for model in (RunVersion, Run, Document):
        model.objects.all().delete()
    output = import_runs(write_jsonl(tmp_path / "manifests.jsonl", [manifest, other]), fails=True)
    assert "line 2, field run.spec.sourceNative.externalId:" in output
    assert "also on line 1 with different content" in output
