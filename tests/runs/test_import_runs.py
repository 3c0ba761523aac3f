"""`import_runs` and `export_runs` against the database: whole files, idempotent, round-trip exact."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from records.canonical import digest_of_bytes
from runs.models import ComparisonGroup, Definition, Document, ImportLog, Run, RunVersion, SourceBoard, WorkloadCase
from tests.conftest import SEED_MANIFEST, ImportRuns, data_pack
from tests.pages import write_jsonl

SOL_SUBMISSIONS = "sol-execbench/submissions.jsonl"
INDEX_MODELS = (Run, RunVersion, Document, Definition, WorkloadCase, ComparisonGroup, SourceBoard)


def snapshot() -> dict[str, Any]:
    """What an import leaves behind: row counts and every digest."""
    return {
        "counts": {model.__name__: model.objects.count() for model in INDEX_MODELS},
        "runs": sorted(Run.objects.values_list("run_id", "digest")),
        "versions": sorted(RunVersion.objects.values_list("run__run_id", "digest")),
        "documents": sorted(Document.objects.values_list("digest", flat=True)),
    }


def submission_lines(sample: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (sample / SOL_SUBMISSIONS).read_text().splitlines()]


def test_every_file_in_the_data_pack_imports(import_runs: ImportRuns) -> None:
    output = import_runs(data_pack())
    assert "files imported" in output
    assert not ImportLog.objects.exclude(error="").exists()
    assert Run.objects.filter(source="sol-execbench").count() >= 8
    assert Run.objects.filter(source="kernelbench").count() >= 500
    assert Run.objects.filter(source="flashinfer-bench").count() >= 3
    assert Definition.objects.filter(source="sol-execbench").exclude(case_count=0).count() >= 10


def test_importing_twice_changes_nothing(import_runs: ImportRuns) -> None:
    import_runs(data_pack())
    first = snapshot()
    output = import_runs(data_pack())
    assert snapshot() == first
    assert "0 new, 0 updated" in output


def test_export_then_import_into_an_empty_database_gives_identical_digests(
    import_runs: ImportRuns, sample: Path, tmp_path: Path
) -> None:
    import_runs(sample)
    import_runs(SEED_MANIFEST, redigest=True)
    before = snapshot()
    declared = dict(Run.objects.values_list("run_id", "declared_digests"))
    export = tmp_path / "export.jsonl"
    call_command("export_runs", out=export, stderr=None)
    assert len(export.read_text().splitlines()) == before["counts"]["RunVersion"]

    for model in (RunVersion, Run, ComparisonGroup, Document, WorkloadCase, SourceBoard, Definition):
        model.objects.all().delete()
    import_runs(export)
    after = snapshot()
    assert after["runs"] == before["runs"]
    assert after["versions"] == before["versions"]
    assert set(after["documents"]) == set(before["documents"])
    assert dict(Run.objects.values_list("run_id", "declared_digests")) == declared


def test_every_stored_digest_recomputes_from_its_canonical_json(import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample)
    import_runs(SEED_MANIFEST, redigest=True)
    for document in Document.objects.all():
        assert digest_of_bytes(document.canonical.encode()) == document.digest


def test_the_seed_is_refused_without_redigest(import_runs: ImportRuns) -> None:
    output = import_runs(SEED_MANIFEST, fails=True)
    assert not Run.objects.exists() and not Document.objects.exists()
    assert "sha256:2964c5c4ed9cb0dcdc0f74674035bc71bf5e66620939e38441060f76434ed3e5" in output
    assert "sha256:3f554a31a601edfb225b1828b104ce4c9a8254dd925ee6ce63fc357304b2098a" in output
    assert "protocol document" in output
    assert "--redigest" in output
    assert ImportLog.objects.get().error in output  # the failure is kept for moderators too


def test_the_seed_imports_with_redigest_and_keeps_its_declared_digests(import_runs: ImportRuns) -> None:
    import_runs(SEED_MANIFEST, redigest=True)
    run = Run.objects.get()
    assert (run.source, run.external_id) == ("sol-execbench", "1307")
    assert run.latency_ns == 175457
    assert run.declared_digests["protocol"] == "sha256:2964c5c4ed9cb0dcdc0f74674035bc71bf5e66620939e38441060f76434ed3e5"
    assert run.protocol_digest == "sha256:3f554a31a601edfb225b1828b104ce4c9a8254dd925ee6ce63fc357304b2098a"
    stored = Document.objects.get(digest=run.digest)
    assert digest_of_bytes(stored.canonical.encode()) == run.digest
    assert json.loads(stored.canonical)["spec"]["protocolDigest"] == run.protocol_digest


def test_sol_runs_take_their_rank_from_the_board_not_the_client(import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "sol-execbench")
    ranks = dict(Run.objects.filter(source="sol-execbench").values_list("external_id", "source_rank"))
    board = {line["id"]: line for line in submission_lines(sample)}
    leaderboard = json.loads((sample / "sol-execbench" / "leaderboard.json").read_text())
    for submission_id, record in board.items():
        scores = leaderboard[str(record["kernel_id"])]["scores"]
        if record["sol_score"] in scores:
            assert ranks[str(submission_id)] == 1 + sum(score > record["sol_score"] for score in scores)


def test_ranks_follow_the_board_whichever_file_comes_first(import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / SOL_SUBMISSIONS)
    assert not Run.objects.exclude(source_rank=None).exists()
    import_runs(sample / "sol-execbench" / "leaderboard.json")
    assert Run.objects.get(external_id="18134").source_rank == 6


def test_private_submissions_stay_out_of_the_source_rank(import_runs: ImportRuns, sample: Path, tmp_path: Path) -> None:
    records = [record | {"submission_mode": "private"} for record in submission_lines(sample)[:1]]
    import_runs(write_jsonl(tmp_path / "private.jsonl", records), sample / "sol-execbench" / "leaderboard.json")
    run = Run.objects.get()
    assert run.on_public_board is False and run.source_rank is None


def test_a_changed_record_keeps_its_permalink_and_adds_a_version(
    import_runs: ImportRuns, sample: Path, tmp_path: Path
) -> None:
    import_runs(sample / SOL_SUBMISSIONS)
    run = Run.objects.get(external_id="18134")
    old_digest = run.digest
    records = submission_lines(sample)
    records[0]["sol_score"] = 0.85
    output = import_runs(write_jsonl(tmp_path / "submissions.jsonl", records))
    assert "1 updated" in output
    run.refresh_from_db()
    assert run.digest != old_digest
    assert set(run.versions.values_list("digest", flat=True)) == {old_digest, run.digest}
    assert run.version_count == 2
    assert Document.objects.filter(digest=old_digest).exists()
    assert run.source_score == 0.85
    # Importing the old file again does not flip the run back.
    import_runs(sample / SOL_SUBMISSIONS)
    run.refresh_from_db()
    assert run.versions.count() == run.version_count == 2 and run.source_score == 0.85


def replaced(old: str, new: str, keep: int = 1) -> Any:
    """A file whose line `keep + 1` is line 2 with `old` replaced by `new`."""
    return lambda lines: lines[:keep] + [lines[1].replace(old, new)]


BAD_INPUTS = {
    "truncated JSON": (lambda lines: lines[:1] + ['{"event": "poll", "id": 5, "kernel_'], 2, None, "not valid JSON"),
    "wrong type": (
        replaced('"latency_ms": 0.003344', '"latency_ms": "3us"'),
        2,
        "latency_ms",
        "valid number",
    ),
    "negative latency": (
        replaced('"latency_ms": 0.003344', '"latency_ms": -1'),
        2,
        "latency_ms",
        "greater than 0",
    ),
    "missing latency": (
        replaced('"latency_ms": 0.003344', '"latency_ms": null'),
        2,
        "latency_ms",
        "needs a latency",
    ),
    "non-finite number": (
        replaced('"sol_score": 0.892167', '"sol_score": NaN'),
        2,
        None,
        "NaN is not a JSON number",
    ),
    "overflowing number": (
        replaced('"avg_speedup": 6.5883', '"avg_speedup": 1e999'),
        2,
        None,
        "too large",
    ),
    "same id, other content": (
        replaced('"sol_score": 0.892167', '"sol_score": 0.5', keep=2),
        3,
        "id",
        "also on line 2 with different content",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_refused_with_file_line_and_field_and_nothing_is_written(
    import_runs: ImportRuns, sample: Path, tmp_path: Path, case: str
) -> None:
    make_lines, line, field, message = BAD_INPUTS[case]
    lines = [
        json.dumps({k: v for k, v in json.loads(raw).items() if k != "event"})
        for raw in (sample / SOL_SUBMISSIONS).read_text().splitlines()
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(make_lines(lines)) + "\n")
    output = import_runs(path, fails=True)
    assert f"error: {path}, line {line}" in output
    if field:
        assert f"field {field}:" in output
    assert message in output
    assert "nothing from" in output and "was written" in output
    assert not Run.objects.exists() and not Document.objects.exists() and not ComparisonGroup.objects.exists()


def test_an_unknown_kind_is_refused(import_runs: ImportRuns, tmp_path: Path) -> None:
    manifest = json.loads(SEED_MANIFEST.read_text())
    manifest["environment"]["kind"] = "GpuBox"
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    output = import_runs(path, redigest=True, fails=True)
    assert "field environment.kind: unknown kind 'GpuBox'" in output
    assert not Run.objects.exists()


def test_a_file_of_the_wrong_source_is_refused(import_runs: ImportRuns, sample: Path) -> None:
    output = import_runs(sample / SOL_SUBMISSIONS, source="kernelbench", fails=True)
    assert "this is a sol-execbench file, not kernelbench" in output
    assert not Run.objects.exists()


def test_a_file_no_source_wrote_is_refused(import_runs: ImportRuns, tmp_path: Path) -> None:
    path = tmp_path / "mystery.json"
    path.write_text('{"hello": "world"}')
    assert "cannot tell which source wrote this file; pass --source" in import_runs(path, fails=True)


def test_one_bad_file_does_not_stop_the_others(import_runs: ImportRuns, sample: Path, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(sample / SOL_SUBMISSIONS, folder / "a-good.jsonl")
    (folder / "b-bad.jsonl").write_text('{"id": 1, "kernel_id": 2}\n')
    output = import_runs(folder, fails=True)
    assert "1 of 2 files failed" in output and "b-bad.jsonl, line 1" in output
    assert Run.objects.count() == 8


def test_a_problem_folder_imports_as_one_unit(import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "sol-execbench" / "problems" / "17" / "metadata.json")
    definition = Definition.objects.get(external_id="17")
    assert definition.case_count == definition.cases.count() == 16
    assert definition.references.count() == 2


def test_a_problem_with_a_broken_workload_file_writes_nothing(
    import_runs: ImportRuns, sample: Path, tmp_path: Path
) -> None:
    problem = tmp_path / "17"
    shutil.copytree(sample / "sol-execbench" / "problems" / "17", problem)
    with (problem / "workload.jsonl").open("a") as handle:
        handle.write('{"uuid": 7}\n')
    assert "workload.jsonl, line 17, field uuid" in import_runs(problem, fails=True)
    assert not Definition.objects.exists()
