"""`manage.py dump`: a reproducible dump that `import_runs` reads back into an empty database, served at /dumps/."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import time
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from kernelindex.celery import app
from runs import dumps, tasks
from runs.models import (
    ComparisonGroup,
    Definition,
    Document,
    ImportLog,
    ReferenceRow,
    Run,
    RunStatusChange,
    RunVersion,
    SourceBoard,
)
from runs.services import restore_run, withdraw_run
from tests.conftest import SEED_MANIFEST, ImportRuns
from tests.pages import sol_records, visible_text, write_jsonl

SECTION_FILES = {"workers.jsonl.gz", "reruns.jsonl.gz", "evidence.jsonl.gz", "notes.jsonl.gz", "reports.jsonl.gz"}
DUMP_FILES = {"manifest.json", "README.txt", *dumps.dump_format.DATA_FILES, *SECTION_FILES}


@pytest.fixture
def index(import_runs: ImportRuns, sample: Path, tmp_path: Path) -> None:
    """Runs from three sources, the seed with its declared digests, a run with two versions, a withdrawn run
    and a restored one."""
    import_runs(sample / "sol-execbench", sample / "flashinfer-bench")
    import_runs(SEED_MANIFEST, redigest=True)
    first, second = sol_records(2, start_id=800_000)
    import_runs(write_jsonl(tmp_path / "old.jsonl", [first, second]))
    import_runs(write_jsonl(tmp_path / "new.jsonl", [first | {"latency_ms": 0.5}, second]))
    withdrawn, restored = Run.objects.filter(source="sol-execbench").order_by("run_id")[:2]
    withdraw_run(withdrawn, "Submitted twice.")
    withdraw_run(restored, "A mistake.")
    restore_run(restored)


def dump_into(folder: Path) -> dict[str, bytes]:
    call_command("dump", out=folder, stdout=io.StringIO())
    return {path.name: path.read_bytes() for path in folder.iterdir()}


def run_pages(client: Client) -> dict[str, str]:
    """Every run's page as a visitor reads it, rendered now (the page cache is off in these tests)."""
    pages = {}
    for run_id in Run.objects.values_list("run_id", flat=True):
        response = client.get(f"/runs/{run_id}")
        assert response.status_code in (200, 410)
        pages[run_id] = visible_text(response.content)
    return pages


def stored() -> dict[str, Any]:
    return {
        "runs": sorted(
            Run.objects.values_list("run_id", "digest", "withdrawn_at", "published_at", "source_rank", "version_count")
        ),
        "versions": sorted(RunVersion.objects.values_list("run__run_id", "digest", "imported_at", "declared_digests")),
        "documents": sorted(Document.objects.values_list("digest", flat=True)),
        "definitions": sorted(Definition.objects.values_list("source", "name", "title", "case_count")),
        "references": sorted(ReferenceRow.objects.values_list("definition__name", "hardware", "kind", "latency_ns")),
        "boards": sorted(SourceBoard.objects.values_list("source", "definition_external_id", "scores")),
        "status_changes": sorted(RunStatusChange.objects.values_list("run__run_id", "action", "reason", "at")),
    }


def forget_everything() -> None:
    Run.objects.all().delete()  # with their versions and status changes
    for model in (ComparisonGroup, Definition, SourceBoard, Document, ImportLog):
        model.objects.all().delete()
    assert not RunVersion.objects.exists() and not RunStatusChange.objects.exists()


@pytest.mark.usefixtures("index")
def test_a_dump_made_twice_is_byte_identical(tmp_path: Path) -> None:
    first = dump_into(tmp_path / "first")
    second = dump_into(tmp_path / "second")
    assert set(first) == DUMP_FILES
    assert first == second
    for name in (*dumps.dump_format.DATA_FILES, *SECTION_FILES):
        assert first[name][4:8] == b"\0\0\0\0"  # the gzip header's time
        assert gzip.decompress(first[name]) or name in SECTION_FILES  # a complete stream (none rerun here)


@pytest.mark.usefixtures("index")
def test_documents_are_canonical_lines_sorted_by_digest(tmp_path: Path) -> None:
    files = dump_into(tmp_path / "dump")
    lines = gzip.decompress(files["documents.jsonl.gz"]).decode().splitlines()
    digests = ["sha256:" + hashlib.sha256(line.encode()).hexdigest() for line in lines]
    assert digests == sorted(Document.objects.values_list("digest", flat=True))
    manifest = json.loads(files["manifest.json"])
    assert (manifest["format"], manifest["version"]) == ("kernelindex-dump", 4)
    sections = ["workers.jsonl.gz", "reruns.jsonl.gz", "evidence.jsonl.gz", "notes.jsonl.gz", "reports.jsonl.gz"]
    assert manifest["sections"] == sections
    assert manifest["counts"]["documents"] == len(lines)
    for name in (*dumps.dump_format.DATA_FILES, *SECTION_FILES):
        assert manifest["files"][name]["sha256"] == hashlib.sha256(files[name]).hexdigest()
    assert "sorted by digest" in files["README.txt"].decode()


@pytest.mark.usefixtures("index")
def test_a_dump_imported_into_an_empty_database_gives_the_same_digests_and_pages(
    client: Client, import_runs: ImportRuns, tmp_path: Path, settings: Any
) -> None:
    settings.PAGE_CACHE_SECONDS = 0  # each page rendered from the database, never from the cache
    before, pages = stored(), run_pages(client)
    assert any(run.versions.count() == 2 for run in Run.objects.all())
    assert Run.objects.exclude(withdrawn_at=None).count() == 1
    dumped = dump_into(tmp_path / "dump")

    forget_everything()
    output = import_runs(tmp_path / "dump")
    assert "1 of 1 files imported" in output
    assert stored() == before
    assert run_pages(client) == pages
    assert dump_into(tmp_path / "again") == dumped  # and the mirror dumps the very same bytes

    import_runs(tmp_path / "dump")  # again: nothing changes
    assert stored() == before


@pytest.mark.usefixtures("index")
def test_a_damaged_dump_imports_nothing(import_runs: ImportRuns, tmp_path: Path) -> None:
    dump_into(tmp_path / "dump")
    forget_everything()
    runs = tmp_path / "dump" / "runs.jsonl.gz"
    runs.write_bytes(runs.read_bytes()[:-8])
    output = import_runs(tmp_path / "dump", fails=True)
    assert "runs.jsonl.gz" in output and "the dump's manifest says" in output
    assert not Run.objects.exists() and not Document.objects.exists()


@pytest.mark.usefixtures("index")
def test_the_daily_dumps_are_listed_with_their_checksums(client: Client, tmp_path: Path, settings: Any) -> None:
    settings.DUMPS_DIR = tmp_path / "dumps"
    settings.DUMPS_KEPT = 2
    for day in (date(2026, 8, 22), date(2026, 8, 23), date(2026, 8, 24)):
        dumps.make_daily_dump(day)
    kept = sorted(path.name for path in settings.DUMPS_DIR.iterdir())
    assert kept == ["kernelindex-2026-08-23", "kernelindex-2026-08-24"]

    page = client.get("/dumps/")
    assert page.status_code == 200
    text = visible_text(page.content)
    assert text.index("kernelindex-2026-08-24") < text.index("kernelindex-2026-08-23")
    manifest = json.loads((settings.DUMPS_DIR / "kernelindex-2026-08-24" / "manifest.json").read_text())
    for name, entry in manifest["files"].items():
        assert entry["sha256"] in text
        served = client.get(f"/dumps/kernelindex-2026-08-24/{name}")
        assert served.status_code == 200
        assert hashlib.sha256(b"".join(served.streaming_content)).hexdigest() == entry["sha256"]  # type: ignore[attr-defined]
    readme = client.get("/dumps/kernelindex-2026-08-24/README.txt")
    assert b"".join(readme.streaming_content).startswith(b"KernelIndex dump")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "url",
    [
        "/dumps/../kernelindex/settings.py",
        "/dumps/kernelindex-2026-08-24/..%2F..%2Fdb.sqlite3",
        "/dumps/%2e%2e/manifest.json",
        "/dumps/kernelindex-2026-08-24/%2e%2e",
        "/dumps/.kernelindex-2026-08-24.partial/manifest.json",
        "/dumps/kernelindex-2026-08-24/secret.key",
        "/dumps/kernelindex-2026-08-25/manifest.json",
    ],
)
def test_no_path_outside_a_listed_dump_is_served(
    client: Client, db: None, tmp_path: Path, settings: Any, url: str
) -> None:
    settings.DUMPS_DIR = tmp_path / "dumps"
    dumps.make_daily_dump(date(2026, 8, 24))
    (tmp_path / "dumps" / "kernelindex-2026-08-24" / "secret.key").write_text("no")
    (tmp_path / "dumps" / ".kernelindex-2026-08-24.partial").mkdir()
    (tmp_path / "dumps" / ".kernelindex-2026-08-24.partial" / "manifest.json").write_text("{}")
    assert client.get(url).status_code == 404


def test_celery_beat_writes_the_dump_daily(db: None, tmp_path: Path, settings: Any) -> None:
    settings.DUMPS_DIR = tmp_path / "dumps"
    schedule = settings.CELERY_BEAT_SCHEDULE["daily-dump"]
    assert schedule["schedule"] == 24 * 3600
    assert schedule["task"] in app.tasks
    tasks.make_daily_dump()
    today = dumps.dump_name(timezone.now().date())
    assert (settings.DUMPS_DIR / today / "manifest.json").is_file()
    assert not [path for path in settings.DUMPS_DIR.iterdir() if path.name.startswith(".")]


def test_the_dump_task_sent_again_within_the_hour_writes_nothing(db: None, tmp_path: Path, settings: Any) -> None:
    """Celery runs a task by its name from any queue the web tier reads, the results queue a rerun host writes to
    included: a flood of dump tasks costs one dump an hour."""
    settings.DUMPS_DIR = tmp_path / "dumps"
    first = Path(tasks.make_daily_dump())
    written = (first / "manifest.json").stat().st_mtime_ns
    for _ in range(3):
        assert Path(tasks.make_daily_dump()) == first
    assert (first / "manifest.json").stat().st_mtime_ns == written
    os.utime(first, (time.time() - tasks.DUMP_REWRITE_AFTER_SECONDS - 1,) * 2)
    tasks.make_daily_dump()
    assert (first / "manifest.json").stat().st_mtime_ns != written
