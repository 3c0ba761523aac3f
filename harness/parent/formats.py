"""The public formats as the harness reads them from disk: the model itself is records/formats.py.

The importer checks the same files with the same model, so whatever `import_runs`
stores as rerunnable, the harness accepts, and the other way round. This module
only reads the files and reports the model's first problem as a
HarnessInputError naming the file, the line (for JSONL) and the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from harness.parent.errors import HarnessInputError
from records import formats
from records.errors import RecordError
from records.formats import (
    DTYPES,
    LANGUAGES,
    Axis,
    Case,
    Definition,
    InputSource,
    Language,
    Solution,
    SolutionSpec,
    SourceFile,
    TensorSpec,
    Tolerance,
    dimension_size,
    is_literal_size,
)

__all__ = [
    "DTYPES",
    "LANGUAGES",
    "Axis",
    "Case",
    "Definition",
    "InputSource",
    "Language",
    "Solution",
    "SolutionSpec",
    "SourceFile",
    "TensorSpec",
    "Tolerance",
    "dimension_size",
    "is_literal_size",
    "load_definition",
    "load_solution",
    "load_workload",
]
T = TypeVar("T")


def load_definition(path: Path, reference: Path | None) -> tuple[Path, Definition, str, str]:
    """(definition file, definition, reference source, reference file name) from a file or the folder holding it."""
    if path.is_dir():
        path = path / "definition.json"
    definition = _checked(formats.check_definition, _read_json(path), path)
    if reference is not None:
        return path, definition, _read_text(reference), reference.name
    if definition.reference:
        return path, definition, definition.reference, "reference.py"
    beside = path.parent / "reference.py"
    if beside.is_file():
        return path, definition, _read_text(beside), beside.name
    raise HarnessInputError(path, None, "reference", "no reference: the field is empty and no reference.py beside it")


def load_workload(path: Path, definition: Definition) -> list[tuple[int, Case]]:
    """The cases of a workload.jsonl with their line numbers; a line may be a trace wrapping the case."""
    lines: list[tuple[int, Any]] = []
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            lines.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            raise HarnessInputError(path, number, None, f"not JSON: {error.msg}") from None
    with _as_input_error():
        cases = formats.check_cases(lines, definition, path)
    if not cases:
        raise HarnessInputError(path, None, None, "the workload holds no cases")
    return [(line, case) for line, _, case in cases]


def load_solution(path: Path, definition: Definition) -> Solution:
    solution = _checked(formats.check_solution, _read_json(path), path)
    with _as_input_error():
        formats.check_solution_for(solution, definition, path)
    return solution


def _checked(check: Callable[[Any, Path], T], document: Any, path: Path) -> T:
    with _as_input_error():
        return check(document, path)


@contextmanager
def _as_input_error() -> Iterator[None]:
    # The model raises the importer's RecordError; the harness reports the same four parts as its own error.
    try:
        yield
    except RecordError as error:
        if isinstance(error, HarnessInputError):
            raise
        raise HarnessInputError(error.path, error.line, error.field, error.message) from None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise HarnessInputError(path, None, None, f"cannot read: {error}") from None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as error:
        raise HarnessInputError(path, error.lineno, None, f"not JSON: {error.msg}") from None
