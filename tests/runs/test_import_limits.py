"""Imports refuse what is over the limits of records/limits.py with a clear message, and log the failure."""

from __future__ import annotations

import json
from pathlib import Path

from records import limits
from runs.models import Document, ImportLog, Run
from tests.conftest import SEED_MANIFEST, ImportRuns
from tests.pages import sol_records, write_jsonl


def seed_with_title(title: str) -> dict[str, object]:
    manifest = json.loads(SEED_MANIFEST.read_text())
    manifest["run"]["metadata"]["title"] = title
    return dict(manifest)


def assert_refused_and_logged(output: str, path: Path, where: str) -> None:
    assert f"{path}, {where}" in output
    assert not Run.objects.exists() and not Document.objects.exists()
    log = ImportLog.objects.get(path=str(path))
    assert where in log.error and log.finished_at is not None


def test_a_nul_in_a_title_is_refused_naming_the_field(import_runs: ImportRuns, tmp_path: Path) -> None:
    path = tmp_path / "nul.jsonl"
    path.write_text(json.dumps(seed_with_title("fused\u0000softmax")) + "\n")
    output = import_runs(path, fails=True, redigest=True)
    assert_refused_and_logged(output, path, "line 1, field run.metadata.title: holds a NUL character")


def test_a_deeply_nested_record_is_refused_not_a_traceback(import_runs: ImportRuns, tmp_path: Path) -> None:
    records = sol_records(3)
    path = write_jsonl(tmp_path / "deep.jsonl", records)
    with path.open("a") as handle:
        handle.write(
            json.dumps(records[0] | {"id": 1, "kernel_name": ["x"]})[:-1].replace('["x"]', "[" * 500 + "]" * 500)
        )
        handle.write("}\n")
    output = import_runs(path, fails=True)
    assert_refused_and_logged(output, path, "line 4, field kernel_name.0.0.0")
    assert f"nested deeper than {limits.MAX_DEPTH} levels" in output


def test_an_oversized_first_line_is_refused_and_logged(import_runs: ImportRuns, tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"id": "')
        handle.truncate(limits.MAX_LINE_BYTES + 100)  # sparse: the size without the writing
    output = import_runs(path, fails=True)
    assert_refused_and_logged(output, path, f"line 1: longer than {limits.MAX_LINE_BYTES} bytes")


def test_an_oversized_line_among_good_ones_writes_nothing(import_runs: ImportRuns, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", sol_records(3))
    with path.open("a") as handle:
        handle.write(json.dumps(sol_records(1, start_id=5)[0] | {"kernel_name": "x" * limits.MAX_LINE_BYTES}) + "\n")
    output = import_runs(path, fails=True)
    assert_refused_and_logged(output, path, f"line 4: longer than {limits.MAX_LINE_BYTES} bytes")
