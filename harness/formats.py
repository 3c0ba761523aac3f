"""The public SOL-ExecBench / FlashInfer-Bench formats: definition.json, workload.jsonl, solution.json.

Each loader checks a file against its model and against the other files, and
reports the first problem as a HarnessInputError naming the file, the line
(for JSONL) and the field.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.axes import expression_names
from harness.errors import HarnessInputError

# dtype names as definitions spell them (torch's names); the child maps them to torch dtypes.
DTYPES = frozenset(
    {
        "float64",
        "float32",
        "float16",
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "float4_e2m1fn_x2",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint8",
        "bool",
    }
)
LANGUAGES = frozenset({"python", "triton", "cuda", "cpp"})
M = TypeVar("M", bound=BaseModel)


class _Open(BaseModel):
    # Real files carry fields this harness does not use (hf_id, descriptions); they are kept, not refused.
    model_config = ConfigDict(extra="allow")


class Axis(_Open):
    type: Literal["const", "var", "expr"]
    value: int | None = None
    expression: str | None = None
    description: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> Axis:
        if self.type == "const" and self.value is None:
            raise ValueError("a const axis needs a value")
        if self.type == "expr":
            if not self.expression:
                raise ValueError("an expr axis needs an expression")
            expression_names(self.expression)
        return self


class TensorSpec(_Open):
    # None: a Python scalar; []: a 0-dimensional tensor.
    shape: list[str] | None
    dtype: str
    description: str | None = None


class Definition(_Open):
    name: str = Field(min_length=1)
    description: str | None = None
    op_type: str | None = None
    axes: dict[str, Axis] = Field(default_factory=dict)
    inputs: dict[str, TensorSpec]
    outputs: dict[str, TensorSpec] = Field(min_length=1)
    reference: str | None = None
    custom_inputs_entrypoint: str | None = None
    constraints: list[str] | None = None


class InputSource(_Open):
    type: Literal["random", "scalar", "custom", "safetensors"]
    value: float | int | bool | None = None
    path: str | None = None
    tensor_key: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> InputSource:
        if self.type == "scalar" and self.value is None:
            raise ValueError("a scalar input needs a value")
        if self.type == "safetensors" and not (self.path and self.tensor_key):
            raise ValueError("a safetensors input needs a path and a tensor_key")
        return self


class Tolerance(_Open):
    max_atol: float | None = Field(default=None, ge=0)
    max_rtol: float | None = Field(default=None, ge=0)
    # Both spellings occur in the published workloads.
    required_match_ratio: float | None = Field(default=None, ge=0, le=1)
    required_matched_ratio: float | None = Field(default=None, ge=0, le=1)
    allow_negative_inf: bool = False

    @property
    def match_ratio(self) -> float:
        for ratio in (self.required_match_ratio, self.required_matched_ratio):
            if ratio is not None:
                return ratio
        return 1.0


class Case(_Open):
    uuid: str = Field(min_length=1)
    axes: dict[str, int] = Field(default_factory=dict)
    inputs: dict[str, InputSource] = Field(default_factory=dict)
    tolerance: Tolerance | None = None


class SolutionSpec(_Open):
    language: str | None = None
    languages: list[str] | None = None
    target_hardware: list[str] | str | None = None
    entry_point: str
    destination_passing_style: bool = True
    dependencies: list[str] | None = None
    binding: str | None = None

    @property
    def language_set(self) -> set[str]:
        named = [self.language] if self.language else []
        return {name.lower() for name in [*named, *(self.languages or [])]}


class SourceFile(_Open):
    path: str = Field(min_length=1)
    content: str


class Solution(_Open):
    name: str = Field(min_length=1)
    definition: str
    author: str | None = None
    description: str | None = None
    spec: SolutionSpec
    sources: list[SourceFile] = Field(min_length=1)


def load_definition(path: Path, reference: Path | None) -> tuple[Path, Definition, str, str]:
    """(definition file, definition, reference source, reference file name) from a file or the folder holding it."""
    if path.is_dir():
        path = path / "definition.json"
    definition = _validated(Definition, _read_json(path), path, None)
    _check_definition(definition, path)
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
    text = _read_text(path)
    cases: list[tuple[int, Case]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as error:
            raise HarnessInputError(path, number, None, f"not JSON: {error.msg}") from None
        if isinstance(raw, dict) and isinstance(raw.get("workload"), dict):
            raw = raw["workload"]
        case = _validated(Case, raw, path, number)
        _check_case(case, definition, path, number)
        cases.append((number, case))
    if not cases:
        raise HarnessInputError(path, None, None, "the workload holds no cases")
    return cases


def load_solution(path: Path, definition: Definition) -> Solution:
    solution = _validated(Solution, _read_json(path), path, None)
    if solution.definition != definition.name:
        raise HarnessInputError(
            path, None, "definition", f"the solution is for {solution.definition!r}, not {definition.name!r}"
        )
    unknown = solution.spec.language_set - LANGUAGES
    if unknown or not solution.spec.language_set:
        raise HarnessInputError(path, None, "spec.language", f"unsupported language(s) {sorted(unknown) or 'none'}")
    file_name, _, function = solution.spec.entry_point.partition("::")
    if not function or not file_name:
        raise HarnessInputError(path, None, "spec.entry_point", "expected 'file::function'")
    paths = [source.path for source in solution.sources]
    for index, source_path in enumerate(paths):
        pure = PurePosixPath(source_path)
        if pure.is_absolute() or ".." in pure.parts:
            raise HarnessInputError(path, None, f"sources.{index}.path", f"{source_path!r} must stay in the solution")
    if file_name not in paths:
        raise HarnessInputError(path, None, "spec.entry_point", f"{file_name!r} is not among the sources")
    return solution


def _check_definition(definition: Definition, path: Path) -> None:
    for kind, specs in (("inputs", definition.inputs), ("outputs", definition.outputs)):
        for name, spec in specs.items():
            if spec.dtype not in DTYPES:
                raise HarnessInputError(path, None, f"{kind}.{name}.dtype", f"unknown dtype {spec.dtype!r}")
            for axis in spec.shape or []:
                if axis not in definition.axes:
                    raise HarnessInputError(path, None, f"{kind}.{name}.shape", f"unknown axis {axis!r}")


def _check_case(case: Case, definition: Definition, path: Path, line: int) -> None:
    for name, axis in definition.axes.items():
        if axis.type == "var" and name not in case.axes:
            raise HarnessInputError(path, line, f"axes.{name}", "the case gives no value for this var axis")
    for name, source in case.inputs.items():
        if name not in definition.inputs:
            raise HarnessInputError(path, line, f"inputs.{name}", "not an input of the definition")
        if source.type == "custom" and not definition.custom_inputs_entrypoint:
            raise HarnessInputError(
                path, line, f"inputs.{name}", "a custom input needs the definition's custom_inputs_entrypoint"
            )


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


def _validated(model: type[M], raw: Any, path: Path, line: int | None) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        raise HarnessInputError(path, line, field, first["msg"]) from None
