"""The importer and the harness read the same files with one model: both accept, or both refuse naming one field.

Before records/formats.py they disagreed: the importer refused a literal
dimension and an undeclared custom input, which the harness ran, and stored a
complex64 definition, which the harness could never run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.parent.errors import HarnessInputError
from harness.parent.formats import load_definition, load_solution, load_workload
from records.errors import RecordError
from records.sources.runnable import read_definition_folder, read_solution
from tests.pages import write_jsonl

REFERENCE = """
import torch

def make_inputs(axes_and_scalars, device):
    x = torch.randn(axes_and_scalars["batch"], 128, device=device)
    return {"x": x, "scale": 2.0, "mask": torch.ones_like(x)}

def run(x, scale):
    return x * scale
"""


def definition(**changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "name": "scale_rows",
        "axes": {"batch": {"type": "var"}, "half": {"type": "expr", "expression": "batch / 2"}},
        # A literal dimension, written both ways the sources write one.
        "inputs": {"x": {"shape": ["batch", 128], "dtype": "float32"}, "scale": {"shape": None, "dtype": "float32"}},
        "outputs": {"y": {"shape": ["batch", "128"], "dtype": "float32"}},
        "reference": REFERENCE,
        "custom_inputs_entrypoint": "make_inputs",
    }
    value.update(changes)
    return value


# "mask" is made by the custom entrypoint but is no input of the definition.
CUSTOM_CASE = {"uuid": "c1", "axes": {"batch": 4}, "inputs": {"x": {"type": "custom"}, "mask": {"type": "custom"}}}


def solution(**spec: Any) -> dict[str, Any]:
    return {
        "name": "scale-rows-torch",
        "definition": "scale_rows",
        "author": "tests",
        "spec": {"languages": ["pytorch"], "target_hardware": ["LOCAL"], "entry_point": "kernel.py::run", **spec},
        "sources": [{"path": "kernel.py", "content": "def run(x, scale, y):\n    y.copy_(x * scale)\n"}],
    }


def write_files(folder: Path, document: dict[str, Any], cases: list[Any], solution_document: dict[str, Any]) -> Path:
    folder.mkdir(parents=True)
    (folder / "definition.json").write_text(json.dumps(document))
    write_jsonl(folder / "workload.jsonl", cases)
    (folder / "solution.json").write_text(json.dumps(solution_document))
    return folder


def importer_reads(folder: Path) -> tuple[str, str | None] | None:
    """None when the importer accepts the files, else (file name, field) of its refusal."""
    try:
        read_definition_folder(folder)
        read_solution(folder / "solution.json")
    except RecordError as error:
        return Path(error.path).name, error.field
    return None


def harness_reads(folder: Path) -> tuple[str, str | None] | None:
    try:
        _, loaded, _, _ = load_definition(folder / "definition.json", None)
        load_workload(folder / "workload.jsonl", loaded)
        load_solution(folder / "solution.json", loaded)
    except HarnessInputError as error:
        return Path(error.path).name, error.field
    return None


SAME_FILES = [
    pytest.param(definition(), [CUSTOM_CASE], solution(), None, id="literal dimensions and an undeclared custom input"),
    pytest.param(
        definition(inputs={**definition()["inputs"], "x": {"shape": ["batch", 128], "dtype": "float4_e2m1"}}),
        [CUSTOM_CASE], solution(), None, id="float4_e2m1, the sources' name for packed fp4",
    ),
    pytest.param(
        definition(inputs={**definition()["inputs"], "x": {"shape": ["batch", 128], "dtype": "complex64"}}),
        [CUSTOM_CASE], solution(), ("definition.json", "inputs.x.dtype"), id="complex64 refused",
    ),
    pytest.param(
        definition(outputs={"y": {"shape": ["batch", "width"], "dtype": "float32"}}),
        [CUSTOM_CASE], solution(), ("definition.json", "outputs.y.shape.1"), id="an undeclared axis",
    ),
    pytest.param(
        definition(custom_inputs_entrypoint=None),
        [CUSTOM_CASE], solution(), ("workload.jsonl", "inputs.x"), id="a custom input without an entrypoint",
    ),
    pytest.param(
        definition(), [{**CUSTOM_CASE, "inputs": {"z": {"type": "random"}}}], solution(),
        ("workload.jsonl", "inputs.z"), id="an undeclared random input",
    ),
    pytest.param(
        definition(), [{**CUSTOM_CASE, "axes": {"batch": "4"}}], solution(),
        ("workload.jsonl", "axes.batch"), id="an axis value as a string",
    ),
    pytest.param(
        definition(), [CUSTOM_CASE], solution(languages=["cuda_cpp", "pytorch"]),
        ("solution.json", "spec"), id="compiled and Python languages mixed",
    ),
    pytest.param(
        definition(), [CUSTOM_CASE], solution(languages=["fortran"]), ("solution.json", "spec"), id="unknown language",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("document", "cases", "solution_document", "refusal"), SAME_FILES)
def test_the_importer_and_the_harness_agree(
    tmp_path: Path,
    document: dict[str, Any],
    cases: list[Any],
    solution_document: dict[str, Any],
    refusal: tuple[str, str] | None,
) -> None:
    folder = write_files(tmp_path / "problem", document, cases, solution_document)

    assert importer_reads(folder) == refusal
    assert harness_reads(folder) == refusal


def test_packed_fp4_is_read_under_the_name_the_harness_builds(tmp_path: Path) -> None:
    document = definition(outputs={"y": {"shape": ["batch", 128], "dtype": "float4_e2m1"}})
    folder = write_files(tmp_path / "problem", document, [CUSTOM_CASE], solution())

    assert load_definition(folder, None)[1].outputs["y"].dtype == "float4_e2m1fn_x2"
