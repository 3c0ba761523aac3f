"""The sources KernelIndex reads, and how a file is matched to its adapter.

`discover` turns the paths a user names into import units: a file, a
SOL-ExecBench problem folder (three files that only make sense together), or
a definition folder (definition.json and workload.jsonl, no metadata.json).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from records.errors import RecordError
from records.sources import artifacts, flashinfer_bench, kernelbench, native, sol_execbench
from records.sources.base import Adapter, iter_json_lines, read_json_file


@dataclass(frozen=True)
class SourceInfo:
    key: str
    title: str
    url: str
    description: str
    external_id_format: str = "{}"


SOURCES = {
    info.key: info
    for info in (
        SourceInfo(
            "sol-execbench",
            "NVIDIA SOL-ExecBench",
            "https://research.nvidia.com/benchmarks/sol-execbench",
            "Leaderboard of kernels scored against a speed-of-light bound on NVIDIA B200.",
            external_id_format="submission/{}",
        ),
        SourceInfo(
            "kernelbench",
            "KernelBench",
            "https://github.com/ScalingIntelligence/KernelBench",
            "Baseline timings of the PyTorch reference problems (eager and torch.compile).",
        ),
        SourceInfo(
            "flashinfer-bench",
            "FlashInfer-Bench",
            "https://github.com/flashinfer-ai/flashinfer-bench",
            "Evaluation traces of kernel solutions for LLM serving operators, case by case.",
        ),
        SourceInfo(
            "kernelindex",
            "KernelIndex",
            "",
            "Manifests published directly, and KernelIndex's own controlled reruns.",
        ),
    )
}


def source_title(key: str) -> str:
    info = SOURCES.get(key)
    return info.title if info else key


def display_external_id(source: str, external_id: str) -> str:
    info = SOURCES.get(source)
    return info.external_id_format.format(external_id) if info else external_id


@dataclass(frozen=True)
class ImportUnit:
    path: Path
    adapter: Adapter

    @property
    def source(self) -> str:
        return self.adapter.name


DATA_SUFFIXES = {".json", ".jsonl"}


def discover(paths: list[Path], *, source: str | None = None, redigest: bool = False) -> list[ImportUnit]:
    """Import units for every path; folders are walked, skipping files that are not JSON."""
    units: list[ImportUnit] = []
    for path in paths:
        if not path.exists():
            raise RecordError(path, None, None, "no such file or folder")
        for unit_path in _unit_paths(path):
            units.append(ImportUnit(unit_path, detect(unit_path, source=source, redigest=redigest)))
    return units


def _unit_paths(path: Path) -> list[Path]:
    if _is_folder_unit(path):
        return [path]
    if path.is_file():
        if path.name in sol_execbench.PROBLEM_FILES and _is_folder_unit(path.parent):
            return [path.parent]
        return [path]
    found: list[Path] = []
    for child in sorted(path.iterdir(), key=_natural_key):
        if child.name.startswith("."):
            continue
        if child.is_dir():
            found.extend(_unit_paths(child))
        elif child.suffix in DATA_SUFFIXES:
            found.append(child)
    return found


def _is_folder_unit(path: Path) -> bool:
    return sol_execbench.is_problem_folder(path) or artifacts.is_definition_folder(path)


def _natural_key(path: Path) -> tuple[int, int | str]:
    return (0, int(path.name)) if path.name.isdigit() else (1, path.name)


def detect(path: Path, *, source: str | None = None, redigest: bool = False) -> Adapter:
    """The adapter for a unit, from its content; with `source` given, a mismatch is an error."""
    adapter = _sniff(path, redigest)
    if adapter is None:
        if source is None:
            raise RecordError(path, None, None, "cannot tell which source wrote this file; pass --source")
        adapter = _default_adapter(path, source, redigest)
    if source is not None and adapter.name != source:
        raise RecordError(path, None, None, f"this is a {adapter.name} file, not {source}")
    return adapter


def _sniff(path: Path, redigest: bool) -> Adapter | None:
    if path.is_dir():
        if sol_execbench.is_problem_folder(path):
            return sol_execbench.ProblemAdapter()
        return artifacts.DefinitionFolderAdapter() if artifacts.is_definition_folder(path) else None
    if path.suffix == ".jsonl":
        return _sniff_record(_first_line(path), redigest)
    document = read_json_file(path)
    if artifacts.looks_like_solution(document):
        return artifacts.SolutionAdapter()
    if sol_execbench.looks_like_board(document):
        return sol_execbench.BoardAdapter()
    if kernelbench.looks_like_baseline_timing(document):
        return kernelbench.BaselineTimingAdapter()
    if flashinfer_bench.looks_like_summary(document):
        return flashinfer_bench.SummaryAdapter()
    return _sniff_record(document, redigest)


def _sniff_record(record: Any, redigest: bool) -> Adapter | None:
    if sol_execbench.looks_like_submission(record):
        return sol_execbench.SubmissionsAdapter()
    if flashinfer_bench.looks_like_trace(record):
        return flashinfer_bench.TraceAdapter()
    if native.looks_like_manifest(record):
        return native.ManifestAdapter(redigest=redigest)
    return None


def _first_line(path: Path) -> Any:
    for _, value in iter_json_lines(path):
        return value
    raise RecordError(path, None, None, "the file is empty")


def _default_adapter(path: Path, source: str, redigest: bool) -> Adapter:
    """With --source given and nothing recognisable, let that source's adapter name the problem."""
    defaults: dict[str, Adapter] = {
        "sol-execbench": sol_execbench.SubmissionsAdapter(),
        "kernelbench": kernelbench.BaselineTimingAdapter(),
        "flashinfer-bench": flashinfer_bench.TraceAdapter(),
        "kernelindex": native.ManifestAdapter(redigest=redigest),
    }
    if source not in defaults:
        raise RecordError(path, None, None, f"unknown source {source!r}; expected one of {', '.join(defaults)}")
    return defaults[source]
