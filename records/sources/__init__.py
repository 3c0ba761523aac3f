"""The sources KernelIndex reads (REGISTRY, one entry each), and how a file is matched to its adapter.

`discover` turns the paths a user names into import units: a file, a
SOL-ExecBench problem folder (three files that only make sense together), or
a definition folder (definition.json and workload.jsonl, no metadata.json).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from records.errors import RecordError
from records.sources import dump, flashinfer_bench, kernelbench, native, runnable, sol_execbench
from records.sources.base import Adapter, iter_json_lines, read_json_file

DEFAULT_RERUN_PROTOCOL = "kernelindex"


@dataclass(frozen=True)
class SourceInfo:
    """What the pages say about a source."""

    key: str
    title: str
    url: str
    description: str
    external_id_format: str = "{}"
    # The revision a run's implementation is shown with where its source names none ({} is the external id).
    revision_format: str = ""
    # The source's name in the site's navigation and on the home page; empty for KernelIndex's own.
    navigation_title: str = ""
    # The evaluation protocol a rerun of the source's runs follows (`python -m harness run --protocol`):
    # the source's own evaluator where the harness has it, else KernelIndex's.
    rerun_protocol: str = DEFAULT_RERUN_PROTOCOL


UnitKind = Literal["folder", "document", "record"]
# An adapter for a format, given --redigest (which only KernelIndex's own manifests heed).
AdapterFactory = Callable[[bool], Adapter]


def ignoring_redigest(adapter: Callable[[], Adapter]) -> AdapterFactory:
    return lambda redigest: adapter()


@dataclass(frozen=True)
class Format:
    """One kind of unit a source publishes: a test on its content, and the adapter that reads it.

    A "folder" format tests a folder path (its `files`, named alone, stand for
    the folder); a "document" format a whole-file JSON document; a "record"
    format one record, the first line of a JSONL file or a whole document.
    """

    unit: UnitKind
    looks_like: Callable[[Any], bool]
    adapter: AdapterFactory
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Source:
    """Everything KernelIndex knows of a source: adding a source is adding one of these to REGISTRY."""

    info: SourceInfo
    formats: tuple[Format, ...]
    # What reads a file that no format recognises when --source names this source: its errors say why.
    default_adapter: AdapterFactory


# In the order the pages list the sources; units are recognised by the formats in this order too.
REGISTRY = (
    Source(
        SourceInfo(
            "sol-execbench",
            "NVIDIA SOL-ExecBench",
            "https://research.nvidia.com/benchmarks/sol-execbench",
            "Leaderboard of kernels scored against a speed-of-light bound on NVIDIA B200.",
            external_id_format="submission/{}",
            revision_format="submission-{}",
            navigation_title="SOL-ExecBench",
            rerun_protocol="sol-execbench",
        ),
        (
            Format(
                "folder",
                sol_execbench.is_problem_folder,
                ignoring_redigest(sol_execbench.ProblemAdapter),
                files=sol_execbench.PROBLEM_FILES,
            ),
            Format("document", sol_execbench.looks_like_board, ignoring_redigest(sol_execbench.BoardAdapter)),
            Format("record", sol_execbench.looks_like_submission, ignoring_redigest(sol_execbench.SubmissionsAdapter)),
        ),
        ignoring_redigest(sol_execbench.SubmissionsAdapter),
    ),
    Source(
        SourceInfo(
            "kernelbench",
            "KernelBench",
            "https://github.com/ScalingIntelligence/KernelBench",
            "Baseline timings of the PyTorch reference problems (eager and torch.compile).",
            navigation_title="KernelBench",
        ),
        (
            Format(
                "document", kernelbench.looks_like_baseline_timing, ignoring_redigest(kernelbench.BaselineTimingAdapter)
            ),
        ),
        ignoring_redigest(kernelbench.BaselineTimingAdapter),
    ),
    Source(
        SourceInfo(
            "flashinfer-bench",
            "FlashInfer-Bench",
            "https://github.com/flashinfer-ai/flashinfer-bench",
            "Evaluation traces of kernel solutions for LLM serving operators, case by case.",
            navigation_title="FlashInfer-Bench",
            rerun_protocol="flashinfer-bench",
        ),
        (
            Format("document", flashinfer_bench.looks_like_summary, ignoring_redigest(flashinfer_bench.SummaryAdapter)),
            Format("record", flashinfer_bench.looks_like_trace, ignoring_redigest(flashinfer_bench.TraceAdapter)),
        ),
        ignoring_redigest(flashinfer_bench.TraceAdapter),
    ),
    Source(
        SourceInfo(
            native.SOURCE,
            "KernelIndex",
            "",
            "Manifests published directly, and KernelIndex's own controlled reruns.",
        ),
        (
            # A dump of KernelIndex itself (`manage.py dump`), read back whole.
            Format("folder", dump.is_dump_folder, ignoring_redigest(dump.DumpAdapter), files=(dump.MANIFEST_FILE,)),
            Format(
                "folder",
                runnable.is_definition_folder,
                ignoring_redigest(runnable.DefinitionFolderAdapter),
                files=(runnable.DEFINITION_FILE, runnable.WORKLOAD_FILE),
            ),
            Format("document", runnable.looks_like_solution, ignoring_redigest(runnable.SolutionAdapter)),
            Format("record", native.looks_like_manifest, native.ManifestAdapter),
        ),
        native.ManifestAdapter,
    ),
)
SOURCES = {source.info.key: source.info for source in REGISTRY}


def navigation_sources() -> list[SourceInfo]:
    """The sources the site's navigation and home page name, in registry order."""
    return [info for info in SOURCES.values() if info.navigation_title]


def source_title(key: str) -> str:
    info = SOURCES.get(key)
    return info.title if info else key


def rerun_protocol_of(source: str) -> str:
    """The protocol a rerun of a run from this source follows; KernelIndex's own for any other source."""
    info = SOURCES.get(source)
    return info.rerun_protocol if info else DEFAULT_RERUN_PROTOCOL


def display_external_id(source: str, external_id: str) -> str:
    info = SOURCES.get(source)
    return info.external_id_format.format(external_id) if info else external_id


def default_revision(source: str, external_id: str) -> str:
    info = SOURCES.get(source)
    return info.revision_format.format(external_id) if info else ""


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
        if path.name in FOLDER_FILES and _is_folder_unit(path.parent):
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


def _formats(unit: UnitKind) -> list[Format]:
    return [form for source in REGISTRY for form in source.formats if form.unit == unit]


# Files that, named alone, stand for the folder unit they are in.
FOLDER_FILES = {name for form in _formats("folder") for name in form.files}


def _is_folder_unit(path: Path) -> bool:
    return path.is_dir() and any(form.looks_like(path) for form in _formats("folder"))


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
        return _recognised(_formats("folder"), path, redigest)
    if path.suffix == ".jsonl":
        return _recognised(_formats("record"), _first_line(path), redigest)
    document = read_json_file(path)
    return _recognised(_formats("document") + _formats("record"), document, redigest)


def _recognised(formats: list[Format], value: Any, redigest: bool) -> Adapter | None:
    """The adapter of the first format that recognises the value."""
    for form in formats:
        if form.looks_like(value):
            return form.adapter(redigest)
    return None


def _first_line(path: Path) -> Any:
    for _, value in iter_json_lines(path):
        return value
    raise RecordError(path, None, None, "the file is empty")


def _default_adapter(path: Path, source: str, redigest: bool) -> Adapter:
    """With --source given and nothing recognisable, let that source's adapter name the problem."""
    for entry in REGISTRY:
        if entry.info.key == source:
            return entry.default_adapter(redigest)
    raise RecordError(path, None, None, f"unknown source {source!r}; expected one of {', '.join(SOURCES)}")
