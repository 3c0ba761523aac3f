"""Reading a unit in a process of its own: the same items as on a thread, errors in their turn, no hangs."""

from __future__ import annotations

import json
import multiprocessing
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from records.errors import RecordError
from records.reading import CHUNK, ReaderError, read_in_process, summarized
from records.sources import ImportUnit, detect
from records.sources.sol_execbench import SubmissionsAdapter
from records.summary import RunSummary
from tests.bench.test_ingest_generator import generator
from tests.records.failing_adapters import DyingAdapter, RaisingAdapter, TwoPartError, UnstartableAdapter

RUNS = 2 * CHUNK + 500  # three messages from the reader


@pytest.fixture(scope="module")
def submissions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path: Path = generator().generate(tmp_path_factory.mktemp("reading") / "submissions.jsonl", RUNS, seed=5)
    return path


def read_all(unit: ImportUnit, progress: list[int] | None = None) -> list[object]:
    with read_in_process(unit, progress.append if progress is not None else None) as items:
        return list(items)


def test_the_process_reads_what_the_thread_reads_in_the_same_order(submissions: Path) -> None:
    unit = ImportUnit(submissions, detect(submissions))
    in_process = read_all(unit)
    assert in_process == list(summarized(unit.adapter.read(submissions)))
    assert sum(isinstance(item, RunSummary) for item in in_process) == RUNS


def test_progress_adds_up_to_the_file_as_chunks_arrive(submissions: Path) -> None:
    sizes: list[int] = []
    read_all(ImportUnit(submissions, SubmissionsAdapter()), sizes)
    assert len(sizes) >= 3
    assert sum(sizes) == submissions.stat().st_size


def test_a_bad_record_is_raised_after_the_records_before_it(submissions: Path, tmp_path: Path) -> None:
    lines = submissions.read_text().splitlines(keepends=True)
    bad = json.loads(lines[CHUNK + 9]) | {"latency_ms": -1}
    path = tmp_path / "bad.jsonl"
    path.write_text("".join([*lines[: CHUNK + 9], json.dumps(bad) + "\n", *lines[CHUNK + 10 :]]))
    seen = []
    with pytest.raises(RecordError) as raised, read_in_process(ImportUnit(path, SubmissionsAdapter())) as items:
        seen.extend(items)
    assert (raised.value.path, raised.value.line, raised.value.field) == (str(path), CHUNK + 10, "latency_ms")
    assert len(seen) == CHUNK + 9


def test_a_record_error_survives_pickling() -> None:
    error = RecordError("runs.jsonl", 7, "id", "is also on line 2")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.line, copy.field, copy.message, str(copy)) == (
        "runs.jsonl",
        7,
        "id",
        "is also on line 2",
        str(error),
    )


def test_an_unexpected_error_in_the_reader_is_raised_as_itself_with_the_readers_traceback(submissions: Path) -> None:
    unit = ImportUnit(submissions, RaisingAdapter(CHUNK + 5, KeyError, "kernel_name"))
    with pytest.raises(KeyError) as raised:
        read_all(unit)
    assert any("in the reader process" in note and "failing_adapters.py" in note for note in raised.value.__notes__)


def test_an_error_that_cannot_be_unpickled_arrives_as_a_reader_error(submissions: Path) -> None:
    unit = ImportUnit(submissions, RaisingAdapter(3, TwoPartError, "workload", "missing"))
    with pytest.raises(ReaderError, match="TwoPartError: workload: missing"):
        read_all(unit)


def test_a_killed_reader_is_an_error_not_a_wait(submissions: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ReaderError, match=r"stopped before the end of the file \(exit code -9\)"):
        read_all(ImportUnit(submissions, DyingAdapter(at=CHUNK + 5)))
    assert time.monotonic() - started < 30
    assert not multiprocessing.active_children()


def test_a_reader_that_cannot_start_is_an_error_not_a_wait(submissions: Path) -> None:
    with pytest.raises(ReaderError, match=r"stopped before the end of the file \(exit code 1\)"):
        read_all(ImportUnit(submissions, UnstartableAdapter()))


def test_leaving_early_stops_the_reader(submissions: Path) -> None:
    with read_in_process(ImportUnit(submissions, SubmissionsAdapter())) as items:
        next(items)
    assert not multiprocessing.active_children()


IMPORTER_KILLED_MID_FILE = """
import multiprocessing, os, sys
from pathlib import Path
from records.reading import read_in_process
from records.sources import ImportUnit
from records.sources.sol_execbench import SubmissionsAdapter

with read_in_process(ImportUnit(Path(sys.argv[1]), SubmissionsAdapter())) as items:
    next(items)
    print(multiprocessing.active_children()[0].pid, flush=True)
    os._exit(0)  # as if killed: the reader is never told to stop
"""


def test_a_reader_whose_importer_is_killed_exits_too(submissions: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    importer = subprocess.run(
        [sys.executable, "-c", IMPORTER_KILLED_MID_FILE, str(submissions)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    reader = int(importer.stdout)
    deadline = time.monotonic() + 30
    while not exited(reader):
        assert time.monotonic() < deadline, "the reader outlived its importer"
        time.sleep(0.1)


def exited(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"  # a zombie only waits for whoever adopted it to reap it
