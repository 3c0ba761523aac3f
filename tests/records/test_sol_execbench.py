"""The SOL-ExecBench adapters on the real files, and on what they must refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from records.canonical import digest
from records.errors import RecordError
from records.manifest import RunItem
from records.sources.base import BoardItem, DefinitionItem, SkippedItem
from records.sources.sol_execbench import BoardAdapter, ProblemAdapter, SubmissionsAdapter
from tests.conftest import SAMPLE_DATA, SEED_MANIFEST
from tests.pages import write_jsonl

SOL = SAMPLE_DATA / "sol-execbench"


def runs_in(path: Path) -> list[RunItem]:
    return [item for item in SubmissionsAdapter().read(path) if isinstance(item, RunItem)]


def by_external_id(items: list[RunItem]) -> dict[str, RunItem]:
    return {item.run.value["spec"]["sourceNative"]["externalId"]: item for item in items}


def test_each_final_submission_becomes_one_run() -> None:
    runs = by_external_id(runs_in(SOL / "submissions.jsonl"))
    assert sorted(runs) == ["18134", "18189", "18329", "18332", "18376", "18460", "18472", "18483"]
    spec = runs["18134"].run.value["spec"]
    assert spec["status"] == "passed"
    assert spec["timing"] == {"latencyNs": {"mean": 33102}, "primaryStatistic": "mean"}
    assert spec["sourceNative"]["metrics"] == {
        "sol_score": 0.840472,
        "latency_ms": 0.033102,
        "avg_speedup": 5.2193,
        "fast_1_count": 16,
        "fast_1_total": 16,
    }
    assert spec["sourceNative"]["kernelId"] == "8"


def test_timestamps_are_marked_utc_without_shifting() -> None:
    spec = by_external_id(runs_in(SOL / "submissions.jsonl"))["18134"].run.value["spec"]
    assert spec["observedAt"] == "2026-07-07T11:11:05.358008Z"


def test_client_computed_board_rank_is_not_carried() -> None:
    text = by_external_id(runs_in(SOL / "submissions.jsonl"))["18134"].run.text
    assert "board_rank" not in text and "board_n" not in text and "board_top" not in text


def test_protocol_and_environment_are_the_seeds_documents() -> None:
    seed = json.loads(SEED_MANIFEST.read_text())
    item = runs_in(SOL / "submissions.jsonl")[0]
    assert item.documents["protocol"].digest == digest(seed["protocol"])
    assert item.documents["environment"].digest == digest(seed["environment"])


def test_the_run_points_at_its_documents_by_digest() -> None:
    item = runs_in(SOL / "submissions.jsonl")[0]
    spec = item.run.value["spec"]
    for role, field in (
        ("protocol", "protocolDigest"),
        ("environment", "environmentDigest"),
        ("workload", "workloadDigest"),
    ):
        assert spec[field] == item.documents[role].digest
    # The API names no author or code: no Implementation document is made up.
    assert "implementationDigest" not in spec


def test_an_event_stream_counts_only_each_submissions_last_state() -> None:
    stream = runs_in(SOL / "raw" / "runs" / "5" / "submissions.jsonl")
    assert len(stream) == 1
    final = by_external_id(runs_in(SOL / "submissions.jsonl"))["18332"]
    assert stream[0].run.digest == final.run.digest


def test_an_unfinished_submission_is_skipped_with_a_reason(tmp_path: Path) -> None:
    lines = (SOL / "raw" / "runs" / "5" / "submissions.jsonl").read_text().splitlines()[:3]
    path = tmp_path / "pending.jsonl"
    path.write_text("\n".join(lines) + "\n")
    items = list(SubmissionsAdapter().read(path))
    assert items == [SkippedItem(3, "submission 18332 is PENDING_RESULT, not finished")]


def write_records(path: Path, *records: dict[str, object]) -> Path:
    return write_jsonl(path, list(records))


def first_record() -> dict[str, object]:
    record: dict[str, object] = json.loads((SOL / "submissions.jsonl").read_text().splitlines()[0])
    del record["event"]
    return record


def test_private_submissions_are_marked(tmp_path: Path) -> None:
    path = write_records(tmp_path / "private.jsonl", first_record() | {"submission_mode": "private"})
    assert runs_in(path)[0].run.value["spec"]["sourceNative"]["submissionMode"] == "private"


def test_a_failed_submission_is_a_failed_run_without_timing(tmp_path: Path) -> None:
    record = first_record() | {"status": "FAILED", "is_correct": False, "latency_ms": None, "sol_score": None}
    spec = runs_in(write_records(tmp_path / "failed.jsonl", record))[0].run.value["spec"]
    assert spec["status"] == "failed"
    assert "timing" not in spec


def test_gpu_and_stack_version_are_read_when_the_record_has_them(tmp_path: Path) -> None:
    record = first_record() | {"gpu_type": "H100", "evaluation_stack_version": "v1.1"}
    item = runs_in(write_records(tmp_path / "h100.jsonl", record))[0]
    assert item.documents["environment"].value["spec"]["hardware"] == {
        "vendor": "nvidia",
        "product": "NVIDIA H100",
        "architecture": "sm_90",
    }
    assert item.documents["protocol"].value["spec"]["harness"]["version"] == "v1.1"


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"latency_ms": -0.5}, "latency_ms", "greater than 0"),
        ({"latency_ms": None}, "latency_ms", "needs a latency"),
        ({"latency_ms": "fast"}, "latency_ms", "valid number"),
        ({"sol_score": 1.5}, "sol_score", "less than or equal to 1"),
        ({"id": "18134"}, "id", "valid integer"),
        ({"kernel_name": None}, "kernel_name", "valid string"),
        ({"is_correct": None}, "is_correct", "must say whether it is correct"),
    ],
)
def test_a_bad_record_names_its_line_and_field(
    tmp_path: Path, change: dict[str, object], field: str, message: str
) -> None:
    good = first_record()
    path = write_records(tmp_path / "bad.jsonl", good | {"id": 1}, good | change)
    with pytest.raises(RecordError) as raised:
        runs_in(path)
    assert (raised.value.line, raised.value.field) == (2, field)
    assert message in raised.value.message


def test_plain_records_are_yielded_as_they_are_read(tmp_path: Path) -> None:
    # Nothing past the first line is read before its run is handed on: a file of any size streams.
    path = tmp_path / "stream.jsonl"
    path.write_text(json.dumps(first_record()) + "\n{not json\n")
    items = SubmissionsAdapter().read(path)
    first = next(items)
    assert isinstance(first, RunItem) and first.line == 1
    with pytest.raises(RecordError, match="not valid JSON"):
        next(items)


def test_a_repeated_submission_is_left_to_the_import_which_names_the_id_field(tmp_path: Path) -> None:
    good = first_record()
    items = runs_in(write_records(tmp_path / "twice.jsonl", good, good | {"sol_score": 0.5}))
    assert [item.line for item in items] == [1, 2]
    assert {item.id_field for item in items} == {"id"}


def test_a_problem_folder_is_a_definition_with_cases_and_references() -> None:
    [item] = list(ProblemAdapter().read(SOL / "problems" / "17"))
    assert isinstance(item, DefinitionItem)
    assert item.external_id == "17"
    assert item.title == "MoE expert SwiGLU with down projection backward"
    assert len(item.cases) == 16
    assert item.cases[0].uuid and item.cases[0].tolerance is not None
    kinds = {ref.kind: ref for ref in item.references}
    assert set(kinds) == {"sol_bound", "scoring_baseline"}
    assert len(kinds["sol_bound"].per_case_ns) == 16
    assert kinds["sol_bound"].latency_ns < kinds["scoring_baseline"].latency_ns


def test_the_suite_sol_bound_is_the_geometric_mean_of_the_cases() -> None:
    metadata = json.loads((SOL / "problems" / "17" / "metadata.json").read_text())
    [item] = list(ProblemAdapter().read(SOL / "problems" / "17"))
    bound = next(ref for ref in item.references if ref.kind == "sol_bound")
    # The source's misnamed top-level baseline_latency_ms is this bound, to within 2%.
    assert bound.latency_ns == pytest.approx(metadata["sol"]["baseline_latency_ms"] * 1e6, rel=0.02)


def test_a_board_snapshot_gives_each_kernels_score_distribution() -> None:
    boards = [item for item in BoardAdapter().read(SOL / "leaderboard.json") if isinstance(item, BoardItem)]
    assert len(boards) == 55
    board = next(b for b in boards if b.definition_external_id == "8")
    assert len(board.scores) == 12 and board.scores == sorted(board.scores, reverse=True)
    assert board.hardware == "NVIDIA B200"


def test_a_board_whose_count_disagrees_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "leaderboard.json"
    path.write_text(json.dumps({"8": {"top_sol": 0.9, "top_user": "x", "n": 3, "sol_bound": 1.0, "scores": [0.9]}}))
    with pytest.raises(RecordError, match="holds 1 scores but n is 3") as raised:
        list(BoardAdapter().read(path))
    assert raised.value.field == "8.scores"
