"""What a rerun needs: definition folders and solutions, as content-addressed documents.

A definition folder (`definition.json` and `workload.jsonl`, with the PyTorch
reference inline or in `reference.py` beside them, and no `metadata.json`,
which would make it a SOL-ExecBench problem folder) becomes a `Workload`
document holding the definition and its cases exactly as a harness reads
them. A `solution.json` becomes an `Implementation` document holding the
solution with its sources, each listed as an artifact with its digest. Both
formats are the public SOL-ExecBench / FlashInfer-Bench ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from records.errors import RecordError
from records.identity import NATIVE_SOURCE, definition_title
from records.limits import MAX_STRING_CHARS
from records.manifest import Sealed
from records.schema import NAME_MAX_LENGTH, NAME_PATTERN, NonNegative, Open, make_document, slugify_name
from records.sources.base import (
    CaseItem,
    DefinitionItem,
    DocumentItem,
    Item,
    NonEmpty,
    Progress,
    iter_json_lines,
    read_json_file,
    seal_or_fail,
    validate_record,
)

SOURCE = NATIVE_SOURCE
DEFINITION_FILE = "definition.json"
WORKLOAD_FILE = "workload.jsonl"
REFERENCE_FILE = "reference.py"
METADATA_FILE = "metadata.json"
IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"


# -- definition.json -------------------------------------------------------------
# Formats published elsewhere, so their models are Open: check what a harness relies on, keep everything else.


class Axis(Open):
    type: Literal["const", "var", "expr"]
    value: int | None = None
    expression: NonEmpty | None = None

    @model_validator(mode="after")
    def _has_its_value(self) -> Axis:
        if self.type == "const" and self.value is None:
            raise ValueError("a const axis needs an integer value")
        if self.type == "expr" and self.expression is None:
            raise ValueError("an expr axis needs an expression, e.g. 'hidden_size // num_heads'")
        return self


class Tensor(Open):
    # A null shape is a Python scalar; [] a zero-dimensional tensor.
    shape: list[NonEmpty] | None
    dtype: NonEmpty


class DefinitionFile(Open):
    name: NonEmpty
    description: str = ""
    op_type: str | None = None
    axes: dict[str, Axis] = Field(default_factory=dict)
    inputs: dict[str, Tensor] = Field(min_length=1)
    outputs: dict[str, Tensor] = Field(min_length=1)
    reference: str | None = None
    custom_inputs_entrypoint: Annotated[str, Field(pattern=f"^{IDENTIFIER}$")] | None = None
    constraints: list[str] = Field(default_factory=list)


# -- workload.jsonl --------------------------------------------------------------


class InputSource(Open):
    type: Literal["random", "scalar", "custom", "safetensors"]
    value: Any = None
    path: NonEmpty | None = None
    tensor_key: NonEmpty | None = None

    @model_validator(mode="after")
    def _has_its_parts(self) -> InputSource:
        if self.type == "scalar" and not isinstance(self.value, (int, float, bool)):
            raise ValueError("a scalar input needs a numeric value")
        if self.type == "safetensors" and (self.path is None or self.tensor_key is None):
            raise ValueError("a safetensors input needs a path and a tensor_key")
        return self


class Tolerance(Open):
    max_atol: NonNegative | None = None
    max_rtol: NonNegative | None = None


class WorkloadLine(Open):
    uuid: NonEmpty
    axes: dict[str, int] = Field(default_factory=dict)
    inputs: dict[str, InputSource] = Field(default_factory=dict)
    tolerance: Tolerance | None = None


# -- solution.json ---------------------------------------------------------------


class SolutionSpec(Open):
    language: NonEmpty | None = None
    languages: Annotated[list[NonEmpty], Field(min_length=1)] | None = None
    target_hardware: list[str] | str | None = None
    entry_point: Annotated[str, Field(pattern=f"^[^:]+::{IDENTIFIER}$")]
    destination_passing_style: bool = True
    dependencies: list[str] = Field(default_factory=list)
    binding: str | None = None

    @model_validator(mode="after")
    def _names_a_language(self) -> SolutionSpec:
        if self.language is None and self.languages is None:
            raise ValueError("a solution spec needs language or languages")
        return self


class SourceFile(Open):
    path: NonEmpty
    content: str


class SolutionFile(Open):
    name: NonEmpty
    definition: NonEmpty
    author: NonEmpty | None = None
    description: str | None = None
    spec: SolutionSpec
    sources: list[SourceFile]


# -- folders and files -----------------------------------------------------------


def is_definition_folder(path: Path) -> bool:
    return (
        path.is_dir()
        and (path / DEFINITION_FILE).is_file()
        and (path / WORKLOAD_FILE).is_file()
        and not (path / METADATA_FILE).exists()
    )


def looks_like_solution(document: Any) -> bool:
    if not isinstance(document, dict) or "sources" not in document:
        return False
    spec = document.get("spec")
    return isinstance(spec, dict) and "entry_point" in spec


def document_name(name: str) -> str:
    """The definition's or solution's own name where it is a valid metadata.name, else its slug."""
    return name if NAME_PATTERN.match(name) and len(name) <= NAME_MAX_LENGTH else slugify_name(name)[:NAME_MAX_LENGTH]


class DefinitionFolderAdapter:
    """A definition folder: its runnable Workload document, and the definition with its cases."""

    name = SOURCE

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        if not is_definition_folder(path):
            raise RecordError(path, None, None, f"a definition folder needs {DEFINITION_FILE} and {WORKLOAD_FILE}")
        workload, definition = read_definition_folder(path, progress)
        yield DocumentItem(None, workload)
        yield definition


def read_definition_folder(path: Path, progress: Progress = None) -> tuple[Sealed, DefinitionItem]:
    """The Workload document of a definition folder and the definition it describes."""
    definition_path = path / DEFINITION_FILE
    document = read_json_file(definition_path)
    definition = validate_record(DefinitionFile, document, definition_path, None)
    _check_shapes(definition, definition_path)
    reference = read_reference(path, document)
    if reference is not None and reference != definition.reference:
        document = {**document, "reference": reference}
    cases = list(_read_cases(path / WORKLOAD_FILE, definition, progress))
    workload = runnable_workload(SOURCE, definition.name, document, [raw for raw, _ in cases], path)
    item = DefinitionItem(
        source=SOURCE,
        name=definition.name,
        external_id="",
        title=definition_title(definition.name),
        description=definition.description,
        subset="",
        hf_id="",
        axes=document.get("axes") or {},
        inputs=document["inputs"],
        outputs=document["outputs"],
        cases=[case for _, case in cases],
        references=[],
        workload_digest=workload.digest,
    )
    return workload, item


def runnable_workload(
    source: str, name: str, definition: dict[str, Any], cases: list[dict[str, Any]], path: Path
) -> Sealed:
    """The Workload document a rerun hands to the harness: the definition and every case, as read.

    A document is digested in RFC 8785 form, which sorts object keys, but the order of a definition's
    inputs and outputs is the order of the arguments a kernel takes: it is kept beside them.
    """
    order = {"inputOrder": list(definition.get("inputs") or {}), "outputOrder": list(definition.get("outputs") or {})}
    spec = {"definition": {"source": source, "name": name, "document": definition, **order}, "cases": cases}
    document = make_document("Workload", document_name(name), spec, title=definition_title(name))
    return seal_or_fail(document, "workload", path, None)


def harness_definition(workload: dict[str, Any]) -> dict[str, Any]:
    """The definition.json of a runnable Workload document, its inputs and outputs in their published order."""
    stored = workload["spec"]["definition"]
    definition = dict(stored["document"])
    for role, order in (("inputs", "inputOrder"), ("outputs", "outputOrder")):
        tensors = definition.get(role) or {}
        names = [name for name in stored.get(order) or [] if name in tensors]
        definition[role] = {name: tensors[name] for name in names + sorted(set(tensors) - set(names))}
    return definition


def _check_shapes(definition: DefinitionFile, path: Path) -> None:
    for role, tensors in (("inputs", definition.inputs), ("outputs", definition.outputs)):
        for tensor_name, tensor in tensors.items():
            for index, axis in enumerate(tensor.shape or []):
                if axis not in definition.axes:
                    raise RecordError(
                        path, None, f"{role}.{tensor_name}.shape.{index}", f"unknown axis {axis!r}; not in axes"
                    )


def read_reference(folder: Path, document: dict[str, Any]) -> str | None:
    """The definition's reference: its own field, else reference.py beside it; None when neither holds code."""
    inline = document.get("reference")
    if isinstance(inline, str) and inline.strip():
        return inline
    beside = folder / REFERENCE_FILE
    return _read_text(beside) if beside.is_file() else None


def _read_text(path: Path) -> str:
    if path.stat().st_size > MAX_STRING_CHARS * 4:
        raise RecordError(path, None, None, f"larger than the {MAX_STRING_CHARS}-character limit of one string")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RecordError(path, None, None, "not UTF-8 text") from None
    if len(text) > MAX_STRING_CHARS:
        raise RecordError(path, None, None, f"longer than the {MAX_STRING_CHARS}-character limit of one string")
    if "\0" in text:
        raise RecordError(path, None, None, "holds a NUL character")
    return text


def _read_cases(
    path: Path, definition: DefinitionFile, progress: Progress
) -> Iterator[tuple[dict[str, Any], CaseItem]]:
    """Each case as written (unwrapped from a trace), and as the index keeps it."""
    variable = {name for name, axis in definition.axes.items() if axis.type == "var"}
    seen: set[str] = set()
    for index, (line, value) in enumerate(iter_json_lines(path, progress)):
        raw, prefix = _unwrap(value, definition.name, path, line)
        case = validate_record(WorkloadLine, raw, path, line, prefix=prefix.rstrip("."))
        _check_case(case, variable, definition, path, line, prefix)
        if case.uuid in seen:
            raise RecordError(path, line, f"{prefix}uuid", f"{case.uuid!r} is also an earlier case's uuid")
        seen.add(case.uuid)
        tolerance = raw.get("tolerance")
        yield raw, CaseItem(index, case.uuid, raw.get("axes") or {}, raw.get("inputs") or {}, tolerance)


def _unwrap(value: Any, name: str, path: Path, line: int) -> tuple[Any, str]:
    """A case is a flat line, or a trace `{"definition", "workload": {...}}` around one."""
    if not isinstance(value, dict) or "workload" not in value:
        return value, ""
    if value.get("definition") not in (None, name):
        raise RecordError(path, line, "definition", f"names {value['definition']!r}, not this folder's {name!r}")
    return value["workload"], "workload."


def _check_case(
    case: WorkloadLine, variable: set[str], definition: DefinitionFile, path: Path, line: int, prefix: str
) -> None:
    for axis in case.axes:
        if axis not in variable:
            raise RecordError(path, line, f"{prefix}axes.{axis}", "not a var axis of the definition")
    for axis in sorted(variable - case.axes.keys()):
        raise RecordError(path, line, f"{prefix}axes.{axis}", "missing: every var axis needs a value")
    for name, source in case.inputs.items():
        if name not in definition.inputs:
            raise RecordError(path, line, f"{prefix}inputs.{name}", "not an input of the definition")
        if source.type == "custom" and not definition.custom_inputs_entrypoint:
            raise RecordError(
                path, line, f"{prefix}inputs.{name}", "a custom input needs the definition's custom_inputs_entrypoint"
            )


# -- solutions ---------------------------------------------------------------------


class SolutionAdapter:
    """A solution.json: one Implementation document, its sources listed by digest."""

    name = SOURCE

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        yield DocumentItem(None, read_solution(path))


def read_solution(path: Path) -> Sealed:
    document = read_json_file(path)
    solution = validate_record(SolutionFile, document, path, None)
    _check_sources(solution, path)
    spec: dict[str, Any] = {"name": solution.name}
    if solution.author:
        spec["author"] = solution.author
    if solution.description:
        spec["description"] = solution.description
    spec["definition"] = solution.definition
    spec["language"] = solution.spec.language or ", ".join(solution.spec.languages or [])
    spec["artifacts"] = [{"name": source.path, "digest": source_digest(source.content)} for source in solution.sources]
    spec["solution"] = document
    implementation = make_document("Implementation", document_name(solution.name), spec, title=solution.name)
    return seal_or_fail(implementation, "implementation", path, None)


def source_digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest()


def _check_sources(solution: SolutionFile, path: Path) -> None:
    seen: set[str] = set()
    for index, source in enumerate(solution.sources):
        problem = unsafe_path_problem(source.path)
        if problem:
            raise RecordError(path, None, f"sources.{index}.path", f"{source.path!r} {problem}")
        normal = str(PurePosixPath(source.path))
        if normal in seen:
            raise RecordError(path, None, f"sources.{index}.path", f"{source.path!r} is listed twice")
        seen.add(normal)
    entry_file = solution.spec.entry_point.split("::", 1)[0]
    if solution.sources and str(PurePosixPath(entry_file)) not in seen:
        raise RecordError(path, None, "spec.entry_point", f"names {entry_file!r}, which is not among the sources")


def unsafe_path_problem(value: str) -> str | None:
    """Why a source path could write outside a solution's own folder, or None when it cannot."""
    if "\\" in value or "\0" in value:
        return "must be a plain relative path with forward slashes"
    path = PurePosixPath(value)
    if path.is_absolute():
        return "is absolute; source paths must be relative"
    if ".." in path.parts:
        return "escapes the solution folder ('..')"
    if path.name in ("", "."):
        return "names no file"
    return None
