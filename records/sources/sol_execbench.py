"""NVIDIA SOL-ExecBench: leaderboard submissions, problem folders and board snapshots.

Facts this adapter relies on (see the data pack's README):
- a submission's `latency_ms` is the geometric mean over the definition's
  workloads; timestamps carry no offset and are UTC;
- `board_rank`/`board_n` were computed by the submitter's client, never by the
  board, so they are ignored;
- a problem's top-level `sol.baseline_latency_ms` is the SOL bound, not a
  baseline, so suite values are recomputed from the per-workload ones.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from records.errors import RecordError
from records.formats import check_cases, check_definition
from records.hardware import hardware_spec, product_name
from records.identity import definition_title
from records.manifest import Sealed, assemble
from records.schema import NonNegative, make_document, slugify_name
from records.sources.base import (
    BoardItem,
    CaseItem,
    DefinitionItem,
    DocumentItem,
    Item,
    NonEmpty,
    PositiveMs,
    Progress,
    ReferenceItem,
    SkippedItem,
    SourceRecord,
    iter_json_lines,
    ms_to_ns,
    read_json_file,
    seal_or_fail,
    utc_timestamp,
    validate_record,
)
from records.sources.runnable import read_reference, runnable_workload

SOURCE = "sol-execbench"
DEFAULT_GPU = "B200"
DEFAULT_STACK = "v1.0"
FINAL_STATUSES = {"COMPLETED": None, "FAILED": "failed", "ERROR": "error", "TIMEOUT": "timeout"}
PROBLEM_FILES = ("metadata.json", "definition.json", "workload.jsonl")

Score = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
NonNegativeInt = Annotated[int, Field(ge=0)]


class Submission(SourceRecord):
    """A leaderboard API submission record (`/api/submissions/<id>`)."""

    id: int
    kernel_id: int
    kernel_name: NonEmpty
    status: NonEmpty
    submission_mode: Literal["release", "private"] | None = None
    is_correct: bool | None = None
    sol_score: Score | None = None
    latency_ms: PositiveMs | None = None
    fast_1_count: NonNegativeInt | None = None
    fast_1_total: NonNegativeInt | None = None
    avg_speedup: NonNegative | None = None
    submitted_at: str | None = None
    finished_at: str | None = None
    gpu_type: NonEmpty = DEFAULT_GPU
    evaluation_stack_version: NonEmpty = DEFAULT_STACK
    error_log: str | None = None


class SubmitEvent(SourceRecord):
    submission_id: int
    kernel_id: int


class SubmissionsAdapter:
    """Final submission records, or the raw submit/poll event stream of a client.

    Plain records are yielded as they are read, so a file of any size streams;
    a record that names a submission already seen is left to the import, which
    refuses it when its content differs. Lines that carry an `event` key form a
    stream: a submission's later lines supersede its earlier ones, and only its
    last state counts, so a stream keeps one record per submission until its end.
    """

    name = SOURCE

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        latest: dict[int, tuple[int, Submission]] = {}
        for line, value in iter_json_lines(path, progress):
            if not isinstance(value, dict):
                raise RecordError(path, line, None, "expected a JSON object per line")
            event = value.get("event")
            if event == "submit":
                validate_record(SubmitEvent, value, path, line)
                continue
            if event not in (None, "poll"):
                raise RecordError(path, line, "event", f"unknown event {event!r}; expected 'submit' or 'poll'")
            record = validate_record(Submission, value, path, line)
            if event is None:
                yield submission_item(path, line, record)
            else:
                latest[record.id] = (line, record)
        for line, record in latest.values():
            yield submission_item(path, line, record)


def submission_item(path: Path, line: int, record: Submission) -> Item:
    if record.status not in FINAL_STATUSES:
        return SkippedItem(line, f"submission {record.id} is {record.status}, not finished")
    status = FINAL_STATUSES[record.status] or ("passed" if record.is_correct else "failed")
    if record.status == "COMPLETED" and record.is_correct is None:
        raise RecordError(path, line, "is_correct", "a COMPLETED submission must say whether it is correct")
    if status == "passed" and record.latency_ms is None:
        raise RecordError(path, line, "latency_ms", "a correct submission needs a latency")
    # The API names no author, project or code for a submission, so there is no
    # Implementation document to make; the run's title names the submission.
    run = make_document(
        "BenchmarkRun",
        f"sol-submission-{record.id}",
        _run_spec(record, status),
        title=f"submission {record.id} · {record.kernel_name} · {record.gpu_type}",
    )
    references = {
        "protocol": sol_protocol(record.evaluation_stack_version),
        "environment": sol_environment(record.gpu_type, record.evaluation_stack_version),
        "workload": sol_workload(record.kernel_id, record.kernel_name),
    }
    return assemble(path, line, run, references, id_field="id")


def _run_spec(record: Submission, status: str) -> dict[str, Any]:
    metrics = {
        key: getattr(record, key)
        for key in ("sol_score", "latency_ms", "avg_speedup", "fast_1_count", "fast_1_total")
        if getattr(record, key) is not None
    }
    source_native: dict[str, Any] = {
        "source": SOURCE,
        "benchmark": record.kernel_name,
        "externalId": str(record.id),
        "kernelId": str(record.kernel_id),
        "metrics": metrics,
    }
    if record.submission_mode:
        source_native["submissionMode"] = record.submission_mode
    if record.error_log:
        source_native["errorLog"] = record.error_log[-2000:]
    spec: dict[str, Any] = {"status": status, "sourceNative": source_native}
    observed = record.finished_at or record.submitted_at
    if observed:
        spec["observedAt"] = utc_timestamp(observed)
    if record.latency_ms is not None:
        spec["timing"] = {"latencyNs": {"mean": ms_to_ns(record.latency_ms)}, "primaryStatistic": "mean"}
    return spec


@lru_cache(maxsize=64)
def sol_protocol(stack_version: str) -> Sealed:
    harness = "SOL-ExecBench evaluation stack"
    document = make_document(
        "BenchmarkProtocol",
        slugify_name(f"sol-execbench-leaderboard-{stack_version}"),
        {
            "harness": {"name": harness, "version": stack_version},
            "correctness": {"reference": "definition reference implementation", "comparator": "sol_execbench_eval"},
            "measurement": {"timer": "harness_reported", "primaryStatistic": "mean"},
            "comparability": {
                "notes": "Suite-mean latency and SOL-Score as published by the SOL-ExecBench leaderboard. "
                "Comparable only within one definition, GPU type, and evaluation stack version.",
                "family": "sol_execbench_leaderboard",
            },
        },
        title=f"{harness} {stack_version}",
    )
    return seal_or_fail(document, "protocol", Path(SOURCE), None)


@lru_cache(maxsize=64)
def sol_environment(gpu_type: str, stack_version: str) -> Sealed:
    product = product_name(gpu_type)
    document = make_document(
        "ExecutionEnvironment",
        slugify_name(f"sol-execbench-{gpu_type}-{stack_version}"),
        {"hardware": hardware_spec(product), "software": {"libraries": {"evaluation_stack": stack_version}}},
        title=f"SOL-ExecBench {product}, stack {stack_version}",
    )
    return seal_or_fail(document, "environment", Path(SOURCE), None)


@lru_cache(maxsize=4096)
def sol_workload(kernel_id: int, kernel_name: str) -> Sealed:
    """A SOL-ExecBench kernel id fixes its definition and cases within the dataset."""
    document = make_document(
        "Workload",
        f"sol-execbench-kernel-{kernel_id}",
        {"definition": {"source": SOURCE, "id": str(kernel_id), "name": kernel_name}},
        title=definition_title(kernel_name),
    )
    return seal_or_fail(document, "workload", Path(SOURCE), None)


# -- problem folders ---------------------------------------------------------


class PerWorkload(SourceRecord):
    index: NonNegativeInt
    axes: dict[str, Any] = {}
    sol_ms: PositiveMs
    baseline_latency_ms: PositiveMs


class SolSummary(SourceRecord):
    available: bool
    per_workload: list[PerWorkload] = []


class ProblemMetadata(SourceRecord):
    task_id: int
    subset: str = ""
    collection_index: int | None = None
    name: NonEmpty
    hf_id: str = ""
    num_workloads: NonNegativeInt | None = None
    sol: SolSummary | None = None


class ProblemDefinition(SourceRecord):
    name: NonEmpty
    description: str = ""
    hf_id: str | None = None
    axes: dict[str, dict[str, Any]] = {}
    inputs: dict[str, dict[str, Any]] = {}
    outputs: dict[str, dict[str, Any]] = {}


class ProblemWorkload(SourceRecord):
    uuid: NonEmpty
    axes: dict[str, Any] = {}
    inputs: dict[str, Any] = {}
    tolerance: dict[str, Any] | None = None


def is_problem_folder(path: Path) -> bool:
    return path.is_dir() and all((path / name).is_file() for name in PROBLEM_FILES[:2])


class ProblemAdapter:
    """One problem folder: metadata.json, definition.json and workload.jsonl."""

    name = SOURCE

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        if not is_problem_folder(path):
            raise RecordError(
                path, None, None, "a SOL-ExecBench problem folder needs metadata.json and definition.json"
            )
        metadata = validate_record(
            ProblemMetadata, read_json_file(path / "metadata.json"), path / "metadata.json", None
        )
        document = read_json_file(path / "definition.json")
        definition = validate_record(ProblemDefinition, document, path / "definition.json", None)
        if definition.name != metadata.name:
            raise RecordError(
                path / "definition.json",
                None,
                "name",
                f"{definition.name!r} differs from metadata.json's {metadata.name!r}",
            )
        read = list(_read_cases(path / "workload.jsonl", progress))
        cases = [case for _, _, case in read]
        # With its reference (inline or in reference.py), a problem can be rerun: store it as the harness reads
        # it, once the model the harness reads it with (records/formats.py) accepts the definition and each case.
        reference = read_reference(path, document)
        workload_digest = ""
        if reference is not None:
            runnable = {**document, "reference": reference}
            checked = check_definition(runnable, path / "definition.json")
            check_cases([(line, raw) for line, raw, _ in read], checked, path / "workload.jsonl")
            raws = [raw for _, raw, _ in read]
            workload = runnable_workload(SOURCE, metadata.name, runnable, raws, path)
            workload_digest = workload.digest
            yield DocumentItem(None, workload)
        yield DefinitionItem(
            source=SOURCE,
            name=metadata.name,
            external_id=str(metadata.task_id),
            title=definition_title(metadata.name),
            description=definition.description,
            subset=metadata.subset,
            hf_id=metadata.hf_id or definition.hf_id or "",
            axes=definition.axes,
            inputs=definition.inputs,
            outputs=definition.outputs,
            cases=cases,
            references=_references(path, metadata, len(cases)),
            workload_digest=workload_digest,
        )


def _read_cases(path: Path, progress: Progress) -> Iterator[tuple[int, dict[str, Any], CaseItem]]:
    """Each case with its line, as written, and as the index keeps it."""
    if not path.is_file():
        return
    for index, (line, value) in enumerate(iter_json_lines(path, progress)):
        workload = validate_record(ProblemWorkload, value, path, line)
        yield line, value, CaseItem(index, workload.uuid, workload.axes, workload.inputs, workload.tolerance)


def _references(path: Path, metadata: ProblemMetadata, case_count: int) -> list[ReferenceItem]:
    sol = metadata.sol
    if sol is None or not sol.available or not sol.per_workload:
        return []
    if case_count and len(sol.per_workload) != case_count:
        raise RecordError(
            path / "metadata.json",
            None,
            "sol.per_workload",
            f"has {len(sol.per_workload)} entries but workload.jsonl has {case_count} cases",
        )
    hardware = product_name(DEFAULT_GPU)
    bounds = [ms_to_ns(w.sol_ms) for w in sol.per_workload]
    baselines = [ms_to_ns(w.baseline_latency_ms) for w in sol.per_workload]
    return [
        ReferenceItem("sol_bound", hardware, geometric_mean(bounds), bounds),
        ReferenceItem("scoring_baseline", hardware, geometric_mean(baselines), baselines),
    ]


def geometric_mean(values: list[float | int]) -> float:
    return round(math.exp(sum(math.log(v) for v in values) / len(values)), 3)


# -- board snapshot ----------------------------------------------------------


class Board(SourceRecord):
    top_sol: Score | None = None
    top_user: str = ""
    n: NonNegativeInt
    sol_bound: float | None = None
    scores: list[Score]


class BoardAdapter:
    """leaderboard.json: per kernel id, the sorted SOL scores of the public B200 board."""

    name = SOURCE

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        document = read_json_file(path)
        if not isinstance(document, dict):
            raise RecordError(path, None, None, "a board snapshot is a JSON object keyed by kernel id")
        for kernel_id, value in document.items():
            if not kernel_id.isdigit():
                raise RecordError(path, None, kernel_id, "board keys are numeric kernel ids")
            board = validate_record(Board, value, path, None, prefix=kernel_id)
            if len(board.scores) != board.n:
                raise RecordError(
                    path, None, f"{kernel_id}.scores", f"holds {len(board.scores)} scores but n is {board.n}"
                )
            yield BoardItem(
                source=SOURCE,
                definition_external_id=kernel_id,
                hardware=product_name(DEFAULT_GPU),
                stack_version=DEFAULT_STACK,
                scores=sorted(board.scores, reverse=True),
                top_score=board.top_sol,
                top_user=board.top_user,
            )


def looks_like_board(document: Any) -> bool:
    if not isinstance(document, dict) or not document:
        return False
    first = next(iter(document.values()))
    return isinstance(first, dict) and "scores" in first and "n" in first


def looks_like_submission(record: Any) -> bool:
    return isinstance(record, dict) and ("kernel_id" in record and ("id" in record or "submission_id" in record))
