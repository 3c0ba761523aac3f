"""`import_runs` on definition folders and solution.json files: stored once by digest, whole or not at all."""

from __future__ import annotations

import json
from pathlib import Path

from runs.models import Definition, Document, ImportLog, WorkloadCase
from tests.conftest import ImportRuns
from tests.records.test_runnable import (
    REFERENCE,
    case,
    definition,
    solution,
    write_definition_folder,
    write_solution,
)


def test_a_definition_folder_imports_as_a_definition_and_its_workload_document(
    import_runs: ImportRuns, tmp_path: Path
) -> None:
    folder = write_definition_folder(
        tmp_path / "rms", definition(reference=None), [case("c1", 2), case("c2", 8)], REFERENCE
    )
    output = import_runs(folder, verbosity=2)
    assert "1 definition new or changed; 1 document new" in output
    row = Definition.objects.get(source="kernelindex", name="rms_norm_h64")
    assert row.case_count == 2
    assert list(WorkloadCase.objects.filter(definition=row).values_list("uuid", flat=True)) == ["c1", "c2"]
    assert set(row.axes) == {"batch", "hidden", "rows"}
    document = Document.objects.get(digest=row.workload_digest)
    assert document.kind == "Workload"
    assert document.value["spec"]["definition"]["document"]["reference"] == REFERENCE


def test_a_solution_imports_as_one_implementation_document(import_runs: ImportRuns, tmp_path: Path) -> None:
    path = write_solution(tmp_path / "fast" / "solution.json", solution())
    assert "1 document new" in import_runs(path, source="kernelindex")
    (document,) = Document.objects.filter(kind="Implementation")
    assert document.name == "rms-norm-fast"
    assert [a["name"] for a in document.value["spec"]["artifacts"]] == ["kernel.py", "helpers.py"]


def test_importing_definition_folders_and_solutions_twice_adds_nothing(import_runs: ImportRuns, tmp_path: Path) -> None:
    write_definition_folder(tmp_path / "defs" / "rms", definition(), [case("c1", 2)])
    write_solution(tmp_path / "solutions" / "fast" / "solution.json", solution())
    import_runs(tmp_path)
    documents = sorted(Document.objects.values_list("digest", flat=True))
    definitions = list(Definition.objects.values_list("pk", "content_digest", "workload_digest"))
    output = import_runs(tmp_path, verbosity=2)
    assert output.count("[kernelindex]: nothing new") == 2
    assert "2 of 2 files imported: nothing new" in output
    assert sorted(Document.objects.values_list("digest", flat=True)) == documents
    assert list(Definition.objects.values_list("pk", "content_digest", "workload_digest")) == definitions


def test_a_changed_definition_folder_points_at_its_new_workload_document(
    import_runs: ImportRuns, tmp_path: Path
) -> None:
    folder = write_definition_folder(tmp_path / "rms", definition(), [case("c1", 2)])
    import_runs(folder)
    first = Definition.objects.get().workload_digest
    write_definition_folder(folder, definition(), [case("c1", 2), case("c2", 4)])
    import_runs(folder)
    row = Definition.objects.get()
    assert row.workload_digest != first
    assert row.case_count == 2
    assert Document.objects.filter(kind="Workload").count() == 2  # the old document stays, as every document does


def test_a_bad_solution_fails_naming_file_and_field_and_writes_nothing(import_runs: ImportRuns, tmp_path: Path) -> None:
    good = write_solution(tmp_path / "a" / "solution.json", solution())
    bad_value = solution(sources=[{"path": "kernel.py", "content": "x"}, {"path": "../../etc/passwd", "content": ""}])
    bad = write_solution(tmp_path / "b" / "solution.json", bad_value)
    output = import_runs(tmp_path, fails=True)
    assert f"error: {bad}, field sources.1.path: '../../etc/passwd' escapes the solution folder ('..')" in output
    assert f"nothing from {bad} was written" in output
    assert "1 of 2 files failed" in output
    assert [d.value["spec"]["solution"] for d in Document.objects.filter(kind="Implementation")] == [
        json.loads(good.read_text())
    ]
    assert ImportLog.objects.exclude(error="").get().path == str(bad)


def test_a_bad_definition_folder_fails_naming_file_line_and_field(import_runs: ImportRuns, tmp_path: Path) -> None:
    folder = write_definition_folder(tmp_path / "rms", definition(), [case("c1", 2), case("c2", 4, axes={})])
    output = import_runs(folder, fails=True)
    assert f"{folder / 'workload.jsonl'}, line 2, field axes.batch: missing: every var axis needs a value" in output
    assert not Definition.objects.exists()
    assert not Document.objects.exists()
