"""The import service on files larger than one batch: repeats, versions and idempotence across batches,
and large files read in a process of their own."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from records import summary
from records.errors import RecordError
from records.identity import run_id_for
from records.sources import ImportUnit, detect
from runs import ingest
from runs.models import ComparisonGroup, Definition, Document, ImportLog, Run, RunVersion
from tests.bench.test_ingest_generator import generator
from tests.conftest import ImportRuns
from tests.pages import sol_records, write_jsonl
from tests.records.failing_adapters import RaisingAdapter

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


# -- a large file, read in a process of its own ---------------------------------


def everything_stored() -> dict[str, Any]:
    """Every row an import writes, less the row ids and the times it was written."""
    run_fields = [field for field in ingest.RUN_INDEX_FIELDS if field not in ("definition_id", "group_id")]
    return {
        "runs": sorted(
            Run.objects.values_list("run_id", "source", "external_id", "definition__name", "group__key", *run_fields)
        ),
        "versions": sorted(RunVersion.objects.values_list("run__run_id", "digest", "declared_digests", "source_line")),
        "documents": sorted(Document.objects.values_list("digest", "kind", "name", "canonical")),
        "groups": sorted(ComparisonGroup.objects.values_list("key", "definition__name", "hardware", "native_order")),
        "definitions": sorted(Definition.objects.values_list("source", "name", "external_id", "title")),
    }


def forget_everything() -> None:
    for model in (RunVersion, Run, ComparisonGroup, Definition, Document, ImportLog):
        model.objects.all().delete()


@pytest.fixture
def large_file(tmp_path: Path) -> Path:
    """More runs than a batch and than a reader's chunk, so both are crossed."""
    path: Path = generator().generate(tmp_path / "submissions.jsonl", 2500, seed=11)
    return path


@pytest.mark.django_db
def test_a_file_read_in_a_process_stores_exactly_what_the_thread_stores(large_file: Path) -> None:
    unit = ImportUnit(large_file, detect(large_file))
    on_thread = ingest.import_unit(unit, in_process=False)
    expected = everything_stored()
    forget_everything()
    in_process = ingest.import_unit(unit, in_process=True)
    assert everything_stored() == expected
    assert (in_process.created, in_process.skipped) == (on_thread.created, on_thread.skipped) == (2500, [])
    again = ingest.import_unit(unit, in_process=True)
    assert (again.created, again.unchanged) == (0, 2500)
    assert everything_stored() == expected


def test_a_bad_record_deep_in_a_large_file_is_refused_and_nothing_is_written(
    import_runs: ImportRuns, large_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest, "READER_PROCESS_MIN_BYTES", 0)
    lines = large_file.read_text().splitlines(keepends=True)
    # After the first batch of 2000 runs has been written, inside the import's transaction.
    lines[2300] = json.dumps(json.loads(lines[2300]) | {"kernel_id": "30"}) + "\n"
    large_file.write_text("".join(lines))
    output = import_runs(large_file, fails=True)
    assert f"error: {large_file}, line 2301, field kernel_id: Input should be a valid integer" in output
    assert f"nothing from {large_file} was written" in output
    assert not Run.objects.exists() and not Document.objects.exists() and not RunVersion.objects.exists()
    assert ImportLog.objects.get().error.startswith(f"{large_file}, line 2301")
    assert not multiprocessing.active_children()


@pytest.mark.django_db
def test_a_large_file_reports_its_progress_in_bytes(large_file: Path) -> None:
    read: list[int] = []
    ingest.import_unit(ImportUnit(large_file, detect(large_file)), progress=read.append, in_process=True)
    assert len(read) > 1
    assert sum(read) == large_file.stat().st_size


@pytest.mark.django_db
def test_an_unexpected_error_in_the_reader_writes_nothing(large_file: Path) -> None:
    unit = ImportUnit(large_file, RaisingAdapter(2100, KeyError, "kernel_name"))
    with pytest.raises(KeyError):
        ingest.import_unit(unit, in_process=True)
    assert not Run.objects.exists() and not Document.objects.exists()


@pytest.mark.django_db
@pytest.mark.usefixtures("small_batches")
def test_a_repeat_found_by_the_writer_stops_the_reader(large_file: Path) -> None:
    lines = large_file.read_text().splitlines(keepends=True)
    lines.insert(3, json.dumps(json.loads(lines[0]) | {"sol_score": 0.5}) + "\n")
    large_file.write_text("".join(lines))
    with pytest.raises(RecordError, match=r"line 4, field id: .* is also on line 1 with different content"):
        ingest.import_unit(ImportUnit(large_file, detect(large_file)), in_process=True)
    assert not multiprocessing.active_children()
    assert not Run.objects.exists()


# -- permalink ids that collide ---------------------------------------------------


@pytest.fixture
def colliding_ids(monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """Two SOL-ExecBench submissions whose permalink ids collide, as two among millions may."""
    pair = ("900000", "900001")

    def run_id(source: str, external_id: str) -> str:
        return "c011151011c0" if external_id in pair else run_id_for(source, external_id)

    monkeypatch.setattr(summary, "run_id_for", run_id)
    monkeypatch.setattr(ingest, "run_id_for", run_id)
    return pair


def test_a_permalink_id_collision_in_one_file_is_refused(
    import_runs: ImportRuns, tmp_path: Path, colliding_ids: tuple[str, str]
) -> None:
    output = import_runs(write_jsonl(tmp_path / "two.jsonl", sol_records(2)), fails=True)
    assert "line 2, field id: sol-execbench record '900001' would get the permalink id c011151011c0" in output
    assert "which sol-execbench record '900000' already has" in output
    assert not Run.objects.exists()


def test_a_permalink_id_taken_by_a_stored_run_is_refused(
    import_runs: ImportRuns, tmp_path: Path, colliding_ids: tuple[str, str]
) -> None:
    first, second = sol_records(2)
    import_runs(write_jsonl(tmp_path / "first.jsonl", [first]))
    output = import_runs(write_jsonl(tmp_path / "second.jsonl", [second]), fails=True)
    assert "line 1, field id: sol-execbench record '900001' would get the permalink id c011151011c0" in output
    assert Run.objects.get().external_id == "900000"


def vacuum_and_analyze_times() -> tuple[Any, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # this transaction's statistics snapshot, taken anew
        cursor.execute("SELECT last_vacuum, last_analyze FROM pg_stat_user_tables WHERE relname = 'runs_run'")
        row = cursor.fetchone()
    return (row[0], row[1]) if row else (None, None)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="VACUUM and ANALYZE are PostgreSQL's")
def test_a_large_import_leaves_the_run_table_vacuumed_and_analyzed(
    transactional_db: None, import_runs: ImportRuns, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """import_runs, outside any transaction, vacuums and analyzes the run table after an import that grew it by
    a tenth: pages are at full speed as soon as it returns, and autovacuum has no such table to start on."""
    monkeypatch.setattr(ingest, "ANALYZE_AFTER_RUNS", 5)  # "large": 10,000 runs; a few make the same case
    before = vacuum_and_analyze_times()
    import_runs(write_jsonl(tmp_path / "runs.jsonl", sol_records(20)))
    vacuumed, analyzed = vacuum_and_analyze_times()
    assert vacuumed is not None and (before[0] is None or vacuumed > before[0])
    assert analyzed is not None and (before[1] is None or analyzed > before[1])
