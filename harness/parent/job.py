"""What the child is asked to do: the checked files turned into one job.json, with every shape concrete.

The parent does all validation and axis arithmetic here, without torch, so
that a bad file is refused before a sandbox is started, and the child only
builds tensors of known shapes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.parent.axes import AxisExpressionError, resolve_axes
from harness.parent.errors import HarnessInputError
from harness.parent.formats import Case, Definition, InputSource, Solution, Tolerance, dimension_size


@dataclass
class Inputs:
    """The three files, read and checked against each other."""

    definition_path: Path
    definition: Definition
    reference_source: str
    reference_name: str
    workload_path: Path
    cases: list[tuple[int, Case]]
    solution: Solution


def case_seed(definition: str, uuid: str) -> int:
    """The seed of a case's random inputs: the same for every run of that case of that definition."""
    digest = hashlib.sha256(f"{definition}\n{uuid}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def safetensors_file(relative: str, workload_path: Path, data_root: Path | None) -> Path | None:
    """Where a workload's safetensors path points: under --data-root, beside the workload, or above it."""
    path = Path(relative)
    if path.is_absolute():
        return path if path.is_file() else None
    bases = [data_root] if data_root else []
    bases += [workload_path.parent, *workload_path.parent.parents]
    for base in bases:
        if (base / path).is_file():
            return base / path
    return None


def build_job(
    inputs: Inputs,
    options: dict[str, Any],
    data_root: Path | None,
    child_path_of: Callable[[Path], str],
) -> tuple[dict[str, Any], list[Path]]:
    """(job.json's content, the data files the child must be able to read)."""
    data_files: list[Path] = []
    cases = [_case_job(inputs, line, case, data_root, data_files, child_path_of) for line, case in inputs.cases]
    job = {
        **options,
        "reference_file": inputs.reference_name,
        "custom_inputs_entrypoint": inputs.definition.custom_inputs_entrypoint,
        "solution": solution_entry(inputs.solution),
        "cases": cases,
    }
    return job, data_files


def solution_entry(solution: Solution) -> dict[str, Any]:
    """What a served process needs to load a solution (harness.kernel.process, harness.kernel.loading)."""
    spec = solution.spec
    entry_file, _, entry_function = spec.entry_point.partition("::")
    return {
        "dir": "",  # set by the caller: where the sources are, as the served process sees them
        # Each language with what the loader needs of it: built or imported, the packages and device it needs.
        "languages": spec.language_entries(),
        "compile_options": spec.compile_options or {},
        "entry_file": entry_file,
        "entry_function": entry_function,
        "dps": spec.destination_passing_style,
    }


def _case_job(
    inputs: Inputs,
    line: int,
    case: Case,
    data_root: Path | None,
    data_files: list[Path],
    child_path_of: Callable[[Path], str],
) -> dict[str, Any]:
    definition = inputs.definition
    axes = _case_axes(definition, case, inputs.workload_path, line)
    job_inputs = {}
    for name, spec in definition.inputs.items():
        source = case.inputs.get(name) or InputSource(type="random")
        entry: dict[str, Any] = {
            "source": source.type,
            "shape": None if spec.shape is None else [dimension_size(axis, axes) for axis in spec.shape],
            "dtype": spec.dtype,
            "value": source.value,
            # SOL-ExecBench draws some inputs by what their description says (harness/judge/tensors.py NAME_RULES).
            "description": spec.description,
        }
        if source.type == "safetensors":
            assert source.path is not None
            found = safetensors_file(source.path, inputs.workload_path, data_root)
            if found is None:
                entry["missing"] = (
                    f"safetensors file {source.path!r} not found (looked beside the workload and above it)"
                )
            else:
                data_files.append(found)
                entry["file"] = child_path_of(found)
            entry["key"] = source.tensor_key
        job_inputs[name] = entry
    outputs = {
        name: {
            "shape": None if spec.shape is None else [dimension_size(axis, axes) for axis in spec.shape],
            "dtype": spec.dtype,
        }
        for name, spec in definition.outputs.items()
    }
    tolerance = case.tolerance or Tolerance()
    return {
        "uuid": case.uuid,
        "seed": case_seed(definition.name, case.uuid),
        # A sampling problem's random "probs" is a softmax (harness/judge/tensors.py random_input).
        "op_type": definition.op_type,
        "axes": axes,
        "inputs": job_inputs,
        "outputs": outputs,
        "tolerance": {
            "atol": tolerance.max_atol,
            "rtol": tolerance.max_rtol,
            # None where the case gives none: the protocol's default decides (SOL-ExecBench's is 0.99).
            "match_ratio": _given_match_ratio(tolerance),
            "allow_negative_inf": tolerance.allow_negative_inf,
            "error_cap": tolerance.max_error_cap,
        },
    }


def _given_match_ratio(tolerance: Tolerance) -> float | None:
    given = (tolerance.required_match_ratio, tolerance.required_matched_ratio)
    return next((ratio for ratio in given if ratio is not None), None)


def _case_axes(definition: Definition, case: Case, path: Path, line: int) -> dict[str, int]:
    constants = {name: axis.value for name, axis in definition.axes.items() if axis.type == "const"}
    # A checked case gives every var axis and no axis the definition fixes (records.formats.check_case); its own
    # parameters (axes the definition does not name) are resolved with them, as SOL-ExecBench does, and reach
    # the custom inputs entrypoint.
    variables = dict(case.axes)
    expressions = {name: axis.expression for name, axis in definition.axes.items() if axis.type == "expr"}
    try:
        values = resolve_axes(
            {k: v for k, v in constants.items() if v is not None},
            variables,
            {k: v for k, v in expressions.items() if v is not None},
        )
    except AxisExpressionError as error:
        raise HarnessInputError(path, line, "axes", str(error)) from None
    for name, value in values.items():
        if value < 0:
            raise HarnessInputError(path, line, f"axes.{name}", f"the axis comes out negative ({value})")
    return values
