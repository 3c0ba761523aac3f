"""The public SOL-ExecBench / FlashInfer-Bench formats, one model for the importer and the harness.

definition.json, workload.jsonl (a case a line, or a trace wrapping one) and
solution.json are checked here and nowhere else: `import_runs` stores what
these functions accept, and the harness runs what they accept, so a run is
never imported with a rerun that can only be refused. Each check raises a
RecordError naming the file, the line (for JSONL) and the field.

Pure Python and pydantic only: the harness imports this on GPU hosts that
have nothing but requirements-harness.txt.

Where a rule comes from the sources' own code, the file is named beside it:
SOL-ExecBench (github.com/NVIDIA/SOL-ExecBench, src/sol_execbench/core/data/)
and FlashInfer-Bench (github.com/flashinfer-ai/flashinfer-bench, flashinfer_bench/data/).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from records.axes import AxisExpressionError, expression_names
from records.errors import RecordError

IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
NonEmpty = Annotated[str, Field(min_length=1)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Ratio = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
M = TypeVar("M", bound=BaseModel)

# -- dtypes ----------------------------------------------------------------------
# The names a definition may give, each one the harness can build inputs of and compare (harness/judge/tensors.py
# builds them, harness/judge/checking.py compares them). Both sources' lists (SOL-ExecBench dtypes.py,
# FlashInfer-Bench utils.py) are covered, plus uint8, which the harness handles and native definitions use.
# Complex dtypes are refused: random inputs are drawn as real numbers and the comparison widens to
# float32/float64, which would drop the imaginary part, so a complex output could never be judged.
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
# Both sources map float4_e2m1 to torch.float4_e2m1fn_x2 (two values packed in a byte); read it as that name.
DTYPE_ALIASES = {"float4_e2m1": "float4_e2m1fn_x2"}


# -- languages -------------------------------------------------------------------


@dataclass(frozen=True)
class Language:
    """A solution language: how the harness gets its entry function, and what the host must have for it."""

    name: str
    sources: tuple[str, ...]
    compiled: bool  # built with torch.utils.cpp_extension; otherwise the entry file is imported
    modules: tuple[str, ...] = ()  # Python packages the entry file needs importable
    needs_cuda: bool = False  # runs on an NVIDIA GPU only
    libraries: tuple[str, ...] = ()  # native libraries a compiled solution builds against


SOL = "sol-execbench"
FIB = "flashinfer-bench"
# SOL-ExecBench: solution.py SupportedLanguages (a `languages` list; Python and C++ ones never mixed).
# FlashInfer-Bench: solution.py SupportedLanguages (one `language`).
LANGUAGES: dict[str, Language] = {
    language.name: language
    for language in (
        Language("pytorch", (SOL,), compiled=False, modules=("torch",)),
        Language("python", (FIB,), compiled=False),
        Language("triton", (SOL, FIB), compiled=False, modules=("triton",)),
        Language("tilelang", (FIB,), compiled=False, modules=("tilelang",)),
        Language("cute_dsl", (SOL,), compiled=False, modules=("cutlass",), needs_cuda=True),
        Language("cutile", (SOL,), compiled=False, modules=("cuda.tile",), needs_cuda=True),
        Language("cudnn_frontend", (SOL,), compiled=False, modules=("cudnn",), needs_cuda=True),
        Language("cuda_cpp", (SOL,), compiled=True, needs_cuda=True),
        Language("cuda", (FIB,), compiled=True, needs_cuda=True),
        Language("cpp", (FIB,), compiled=True, needs_cuda=True),
        Language("cutlass", (SOL,), compiled=True, needs_cuda=True, libraries=("cutlass",)),
        Language("cudnn", (SOL,), compiled=True, needs_cuda=True, libraries=("cudnn",)),
        Language("cublas", (SOL,), compiled=True, needs_cuda=True, libraries=("cublas",)),
    )
}


class _Open(BaseModel):
    # Published formats: check what a harness relies on, keep every other field (hf_id, tags, descriptions).
    # Strict, as JSON has real types: "4" is not an axis value, "yes" not a boolean.
    model_config = ConfigDict(extra="allow", strict=True)


# -- definition.json -------------------------------------------------------------


class Axis(_Open):
    type: Literal["const", "var", "expr"]
    value: Annotated[int, Field(ge=0)] | None = None
    expression: NonEmpty | None = None
    description: str | None = None

    @model_validator(mode="after")
    def _has_its_value(self) -> Axis:
        if self.type == "const" and self.value is None:
            raise ValueError("a const axis needs an integer value")
        if self.type == "expr":
            if self.expression is None:
                raise ValueError("an expr axis needs an expression, e.g. 'hidden_size // num_heads'")
            try:
                expression_names(self.expression)
            except AxisExpressionError as error:
                raise ValueError(str(error)) from None
        return self


class TensorSpec(_Open):
    # None: a Python scalar; []: a 0-dimensional tensor. A dimension is an axis name or a literal size,
    # written "128" (SOL-ExecBench definition.py accepts digit strings) or 128.
    shape: list[NonEmpty | Annotated[int, Field(ge=0)]] | None
    dtype: NonEmpty
    description: str | None = None

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        value = DTYPE_ALIASES.get(value, value)
        if value not in DTYPES:
            raise ValueError(f"unknown dtype {value!r}; the harness builds and compares {', '.join(sorted(DTYPES))}")
        return value


class Definition(_Open):
    name: NonEmpty
    description: str | None = None
    op_type: str | None = None
    axes: dict[str, Axis] = Field(default_factory=dict)
    inputs: dict[str, TensorSpec] = Field(min_length=1)
    outputs: dict[str, TensorSpec] = Field(min_length=1)
    reference: str | None = None
    custom_inputs_entrypoint: Annotated[str, Field(pattern=f"^{IDENTIFIER}$")] | None = None
    constraints: list[str] | None = None

    @property
    def variable_axes(self) -> list[str]:
        return [name for name, axis in self.axes.items() if axis.type == "var"]


def is_literal_size(dimension: str | int) -> bool:
    return isinstance(dimension, int) or dimension.isdigit()


def dimension_size(dimension: str | int, axes: Mapping[str, int]) -> int:
    return int(dimension) if is_literal_size(dimension) else axes[str(dimension)]


def check_definition(document: Any, path: Path) -> Definition:
    """The definition a definition.json holds, every shape naming a declared axis or a literal size."""
    definition = validated(Definition, document, path, None)
    for role, tensors in (("inputs", definition.inputs), ("outputs", definition.outputs)):
        for name, tensor in tensors.items():
            for index, dimension in enumerate(tensor.shape or []):
                if not is_literal_size(dimension) and dimension not in definition.axes:
                    raise RecordError(path, None, f"{role}.{name}.shape.{index}", f"unknown axis {dimension!r}")
    return definition


# -- workload.jsonl --------------------------------------------------------------


class InputSource(_Open):
    type: Literal["random", "scalar", "custom", "safetensors"]
    value: float | int | bool | None = None
    path: NonEmpty | None = None
    tensor_key: NonEmpty | None = None

    @model_validator(mode="after")
    def _has_its_parts(self) -> InputSource:
        if self.type == "scalar" and self.value is None:
            raise ValueError("a scalar input needs a numeric value")
        if self.type == "safetensors" and (self.path is None or self.tensor_key is None):
            raise ValueError("a safetensors input needs a path and a tensor_key")
        return self


class Tolerance(_Open):
    max_atol: NonNegative | None = None
    max_rtol: NonNegative | None = None
    # Both spellings occur in the published workloads (SOL-ExecBench workload.py writes required_matched_ratio).
    required_match_ratio: Ratio | None = None
    required_matched_ratio: Ratio | None = None
    allow_negative_inf: bool = False
    # SOL-ExecBench's hard ceiling on the largest absolute error, whatever the matched ratio (docs/workload.md
    # "tolerance"; core/bench/correctness.py compute_error_stats fails a case when max_abs > max_error_cap).
    max_error_cap: NonNegative | None = None

    @property
    def match_ratio(self) -> float:
        for ratio in (self.required_match_ratio, self.required_matched_ratio):
            if ratio is not None:
                return ratio
        return 1.0


class Case(_Open):
    uuid: NonEmpty
    axes: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    inputs: dict[str, InputSource] = Field(default_factory=dict)
    tolerance: Tolerance | None = None


def unwrap_case(value: Any, definition: Definition, path: Path, line: int) -> tuple[Any, str]:
    """(the case, the prefix of its fields): a line is a case, or a trace `{"definition", "workload": {...}}`."""
    if not isinstance(value, dict) or not isinstance(value.get("workload"), dict):
        return value, ""
    if value.get("definition") not in (None, definition.name):
        raise RecordError(
            path, line, "definition", f"names {value['definition']!r}, not this folder's {definition.name!r}"
        )
    return value["workload"], "workload."


def check_case(raw: Any, definition: Definition, path: Path, line: int, prefix: str = "") -> Case:
    """One case of the definition: every var axis given, none the definition fixes, inputs the definition knows.

    An axis the definition does not name is the case's own parameter: SOL-ExecBench resolves it with the others
    and hands it to the custom inputs entrypoint (NVIDIA/SOL-ExecBench@8d2237d2012c core/data/definition.py
    get_resolved_axes_values, core/bench/io.py gen_inputs), as its published workloads use it (`is_joint_block`).
    """
    case = validated(Case, raw, path, line, prefix.rstrip("."))
    variable = definition.variable_axes
    for axis in case.axes:
        if axis in definition.axes and axis not in variable:
            raise RecordError(path, line, f"{prefix}axes.{axis}", "not a var axis of the definition, which fixes it")
    for axis in variable:
        if axis not in case.axes:
            raise RecordError(path, line, f"{prefix}axes.{axis}", "missing: every var axis needs a value")
    for name, source in case.inputs.items():
        if source.type == "custom" and not definition.custom_inputs_entrypoint:
            raise RecordError(
                path, line, f"{prefix}inputs.{name}", "a custom input needs the definition's custom_inputs_entrypoint"
            )
        # A custom entrypoint may make more than the definition passes on (SOL-ExecBench's published
        # workloads list such inputs), so only the other kinds must be inputs of the definition.
        if name not in definition.inputs and source.type != "custom":
            raise RecordError(path, line, f"{prefix}inputs.{name}", "not an input of the definition")
    return case


def check_cases(lines: list[tuple[int, Any]], definition: Definition, path: Path) -> list[tuple[int, Any, Case]]:
    """Every case of a workload.jsonl as (line, the case as written, the case), each uuid once."""
    cases: list[tuple[int, Any, Case]] = []
    seen: set[str] = set()
    for line, value in lines:
        raw, prefix = unwrap_case(value, definition, path, line)
        case = check_case(raw, definition, path, line, prefix)
        if case.uuid in seen:
            raise RecordError(path, line, f"{prefix}uuid", f"{case.uuid!r} is also an earlier case's uuid")
        seen.add(case.uuid)
        cases.append((line, raw, case))
    return cases


# -- solution.json ---------------------------------------------------------------


class SolutionSpec(_Open):
    # SOL-ExecBench writes `languages` (a list), FlashInfer-Bench one `language`; either names the table's.
    language: NonEmpty | None = None
    languages: Annotated[list[NonEmpty], Field(min_length=1)] | None = None
    target_hardware: list[str] | str | None = None
    # SOL-ExecBench and FlashInfer-Bench solution.py: exactly one '::' between a file and a function.
    entry_point: Annotated[str, Field(pattern=f"^[^:]+::{IDENTIFIER}$")]
    destination_passing_style: bool = True
    dependencies: list[str] = Field(default_factory=list)
    binding: str | None = None
    compile_options: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _names_known_languages(self) -> SolutionSpec:
        if self.language is None and self.languages is None:
            raise ValueError("a solution spec needs language or languages")
        unknown = [name for name in self.language_names if name not in LANGUAGES]
        if unknown:
            raise ValueError(f"unknown language(s) {', '.join(unknown)}; known: {', '.join(LANGUAGES)}")
        kinds = {LANGUAGES[name].compiled for name in self.language_names}
        if len(kinds) > 1:
            # SOL-ExecBench solution.py: "C++ and Python cannot be mixed".
            raise ValueError("compiled (C++/CUDA) and Python languages cannot be mixed in one solution")
        return self

    @property
    def language_names(self) -> list[str]:
        """The languages named, lower-cased, each once, in the order written."""
        named = [self.language] if self.language else []
        return list(dict.fromkeys(name.lower() for name in [*named, *(self.languages or [])]))

    @property
    def language_set(self) -> set[str]:
        return set(self.language_names)

    def language_entries(self) -> list[dict[str, Any]]:
        """The languages as the harness's loader takes them (plain data: the child imports no records module)."""
        return [asdict(LANGUAGES[name]) for name in self.language_names]

    @property
    def compiled(self) -> bool:
        return any(LANGUAGES[name].compiled for name in self.language_names)

    @property
    def entry_file(self) -> str:
        return self.entry_point.split("::", 1)[0]

    @property
    def entry_function(self) -> str:
        return self.entry_point.split("::", 1)[1]


class SourceFile(_Open):
    path: NonEmpty
    content: str


class Solution(_Open):
    name: NonEmpty
    definition: NonEmpty
    author: NonEmpty | None = None
    description: str | None = None
    spec: SolutionSpec
    sources: list[SourceFile] = Field(min_length=1)


def check_solution(document: Any, path: Path) -> Solution:
    """The solution a solution.json holds: its source paths stay in its folder, each once, the entry among them."""
    solution = validated(Solution, document, path, None)
    seen: set[str] = set()
    for index, source in enumerate(solution.sources):
        problem = unsafe_path_problem(source.path)
        if problem:
            raise RecordError(path, None, f"sources.{index}.path", f"{source.path!r} {problem}")
        normal = str(PurePosixPath(source.path))
        if normal in seen:
            raise RecordError(path, None, f"sources.{index}.path", f"{source.path!r} is listed twice")
        seen.add(normal)
    entry_file = solution.spec.entry_file
    if str(PurePosixPath(entry_file)) not in seen:
        raise RecordError(path, None, "spec.entry_point", f"names {entry_file!r}, which is not among the sources")
    return solution


def check_solution_for(solution: Solution, definition: Definition, path: Path) -> None:
    if solution.definition != definition.name:
        raise RecordError(
            path, None, "definition", f"the solution is for {solution.definition!r}, not {definition.name!r}"
        )


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


# -- validation ------------------------------------------------------------------


def validated(model: type[M], value: Any, path: Path, line: int | None, prefix: str = "") -> M:
    """`value` as `model`; the first problem becomes a RecordError naming the field as the file spells it."""
    if not isinstance(value, Mapping):
        raise RecordError(path, line, prefix or None, f"expected a JSON object, got {type(value).__name__}")
    try:
        return model.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        location = ".".join(str(part) for part in first["loc"])
        field_name = ".".join(part for part in (prefix, location) if part)
        got = first.get("input")
        detail = first["msg"]
        if first["type"] != "missing" and not isinstance(got, (dict, list)):
            detail = f"{detail} (got {json.dumps(got, default=str)})"
        raise RecordError(path, line, field_name or None, detail) from None
