"""KernelBench baseline timing files: `{level: {problem file: {mean, std, min, max, ...}}}` in ms.

Each entry becomes a run of the PyTorch baseline it timed (eager, or
torch.compile with a backend and mode, read from the file name). The folder
holding the file names the host (`H100_Modal`); each GPU and host gets one
environment. The files carry no timestamp, so the runs have no observedAt.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from records.errors import RecordError
from records.hardware import hardware_spec
from records.identity import definition_title
from records.manifest import Sealed, assemble
from records.schema import NonNegative, make_document, slugify_name
from records.sources.base import (
    Item,
    NonEmpty,
    PositiveMs,
    Progress,
    SourceRecord,
    ms_to_ns,
    read_json_file,
    seal_or_fail,
    validate_record,
)

SOURCE = "kernelbench"
LEVEL_KEY = re.compile(r"^level\d+$")
VARIANT_FILE = re.compile(r"^baseline_time_(?P<variant>.+)\.json$")


class Timing(SourceRecord):
    mean: PositiveMs
    std: NonNegative | None = None
    min: PositiveMs | None = None
    max: PositiveMs | None = None
    num_trials: Annotated[int, Field(gt=0)] | None = None
    hardware: NonEmpty
    device: str | None = None


def implementation_for(variant: str) -> tuple[str, str]:
    """('torch' -> PyTorch eager), ('torch_compile_inductor_default' -> torch.compile, inductor, default)."""
    if variant == "torch":
        return "pytorch-eager", "PyTorch eager"
    match = re.fullmatch(r"torch_compile_(?P<backend>[^_]+)(?:_(?P<mode>.+))?", variant)
    if match:
        backend, mode = match["backend"], match["mode"] or "default"
        return f"torch-compile-{backend}-{mode}", f"torch.compile ({backend}, mode {mode})"
    return slugify_name(variant), variant


class BaselineTimingAdapter:
    name = SOURCE

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        document = read_json_file(path)
        if not looks_like_baseline_timing(document):
            raise RecordError(path, None, None, "a KernelBench timing file maps level1, level2, ... to problem timings")
        match = VARIANT_FILE.match(path.name)
        variant = match["variant"] if match else path.stem
        host = path.parent.name or "unknown-host"
        implementation_slug, implementation_name = implementation_for(variant)
        implementation = seal_or_fail(
            make_document(
                "Implementation",
                f"kernelbench-baseline-{implementation_slug}",
                {"name": implementation_name, "project": "PyTorch", "artifacts": []},
                title=f"KernelBench baseline: {implementation_name}",
            ),
            "implementation",
            path,
            None,
        )
        for level, problems in document.items():
            if not LEVEL_KEY.match(level) or not isinstance(problems, dict):
                raise RecordError(path, None, level, "expected a level key (level1, level2, ...) mapping problems")
            for problem, value in problems.items():
                timing = validate_record(Timing, value, path, None, prefix=f"{level}.{problem}")
                environment = kernelbench_environment(timing.hardware, host)
                definition = f"{level}/{problem}"
                run = make_document(
                    "BenchmarkRun",
                    slugify_name(f"kernelbench-{host}-{variant}-{definition}"),
                    _run_spec(timing, definition, f"{host}/{variant}/{definition}"),
                    title=f"{implementation_name} · {definition_title(problem)} ({level}) · {timing.hardware}",
                )
                workload = make_document(
                    "Workload",
                    slugify_name(f"kernelbench-{definition}"),
                    {"definition": {"source": SOURCE, "name": definition}},
                    title=f"{definition_title(problem)} (KernelBench {level})",
                )
                references = {
                    "protocol": kernelbench_protocol(),
                    "environment": environment,
                    "workload": seal_or_fail(workload, "workload", path, None),
                    "implementation": implementation,
                }
                yield assemble(path, None, run, references, id_field=f"{level}.{problem}")


def _run_spec(timing: Timing, definition: str, external_id: str) -> dict[str, Any]:
    latency = {
        statistic: ms_to_ns(value)
        for statistic, value in (("mean", timing.mean), ("std", timing.std), ("min", timing.min), ("max", timing.max))
        if value is not None
    }
    spec: dict[str, Any] = {
        "status": "measured",
        "timing": {"latencyNs": latency, "primaryStatistic": "mean"},
        "sourceNative": {
            "source": SOURCE,
            "benchmark": definition,
            "externalId": external_id,
            "metrics": {"mean_ms": timing.mean},
        },
    }
    if timing.num_trials is not None:
        spec["timing"]["trials"] = timing.num_trials
    return spec


@lru_cache(maxsize=1)
def kernelbench_protocol() -> Sealed:
    document = make_document(
        "BenchmarkProtocol",
        "kernelbench-baseline-timing",
        {
            "harness": {"name": "KernelBench timing", "version": "unversioned"},
            "measurement": {"timer": "cuda_events", "primaryStatistic": "mean"},
            "correctness": {"reference": "the problem's PyTorch reference (timed itself)", "comparator": "none"},
            "comparability": {
                "family": "kernelbench_baseline_timing",
                "notes": "Baseline timings published by KernelBench, in ms rounded to three significant figures. "
                "Comparable only within one problem and GPU.",
            },
        },
        title="KernelBench baseline timing",
    )
    return seal_or_fail(document, "protocol", Path(SOURCE), None)


@lru_cache(maxsize=256)
def kernelbench_environment(hardware: str, host: str) -> Sealed:
    document = make_document(
        "ExecutionEnvironment",
        slugify_name(f"kernelbench-{host}"),
        {"hardware": hardware_spec(hardware)},
        title=f"KernelBench {hardware} ({host})",
        labels={"host": host},
    )
    return seal_or_fail(document, "environment", Path(SOURCE), None)


def looks_like_baseline_timing(document: Any) -> bool:
    return isinstance(document, dict) and bool(document) and all(LEVEL_KEY.match(k) for k in document)
