"""Definition folders and solution.json files as documents: what they hold, what they refuse, how they are found."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from records.errors import RecordError
from records.sources import discover
from records.sources.base import DefinitionItem, DocumentItem
from records.sources.runnable import (
    DefinitionFolderAdapter,
    SolutionAdapter,
    read_definition_folder,
    read_solution,
)
from tests.pages import write_jsonl

REFERENCE = "import torch\n\n\ndef run(x, eps):\n    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)\n"


def definition(**changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "name": "rms_norm_h64",
        "description": "RMSNorm over 64 features.",
        "op_type": "rmsnorm",
        "axes": {
            "batch": {"type": "var"},
            "hidden": {"type": "const", "value": 64},
            "rows": {"type": "expr", "expression": "batch * 1"},
        },
        "inputs": {"x": {"shape": ["rows", "hidden"], "dtype": "float32"}, "eps": {"shape": None, "dtype": "float32"}},
        "outputs": {"y": {"shape": ["rows", "hidden"], "dtype": "float32"}},
        "reference": REFERENCE,
    }
    value.update(changes)
    return {key: item for key, item in value.items() if item is not None}


def case(uuid: str, batch: int, **changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "uuid": uuid,
        "axes": {"batch": batch},
        "inputs": {"x": {"type": "random"}, "eps": {"type": "scalar", "value": 1e-6}},
    }
    value.update(changes)
    return value


def write_definition_folder(
    folder: Path, document: dict[str, Any], cases: list[dict[str, Any]], reference_py: str | None = None
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "definition.json").write_text(json.dumps(document, indent=2))
    write_jsonl(folder / "workload.jsonl", cases)
    if reference_py is not None:
        (folder / "reference.py").write_text(reference_py)
    return folder


def solution(**changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "name": "rms-norm-fast",
        "definition": "rms_norm_h64",
        "author": "someone",
        "description": "vectorised",
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "kernel.py::run"},
        "sources": [
            {
                "path": "kernel.py",
                "content": "from helpers import scale\n\n\ndef run(x, eps, y):\n    scale(x, eps, y)\n",
            },
            {"path": "helpers.py", "content": "def scale(x, eps, y):\n    y.copy_(x)\n"},
        ],
    }
    value.update(changes)
    return value


def write_solution(path: Path, value: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2))
    return path


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# -- definition folders -----------------------------------------------------------


def test_a_definition_folder_becomes_a_runnable_workload_with_the_inline_reference(tmp_path: Path) -> None:
    cases = [case("c1", 2, tolerance={"max_atol": 1e-4, "max_rtol": 1e-4}), case("c2", 8)]
    folder = write_definition_folder(tmp_path / "rms", definition(), cases)
    workload, item = read_definition_folder(folder)
    spec = workload.value["spec"]
    assert workload.kind == "Workload"
    assert workload.name == "rms_norm_h64"
    assert workload.value["metadata"]["title"] == "Rms norm h64"
    assert spec["definition"]["source"] == "kernelindex"
    assert spec["definition"]["name"] == "rms_norm_h64"
    assert spec["definition"]["document"] == definition()
    assert spec["definition"]["document"]["reference"] == REFERENCE
    assert spec["cases"] == cases
    assert item.workload_digest == workload.digest
    assert [(c.uuid, c.axes, c.tolerance) for c in item.cases] == [
        ("c1", {"batch": 2}, {"max_atol": 1e-4, "max_rtol": 1e-4}),
        ("c2", {"batch": 8}, None),
    ]
    assert item.inputs["eps"] == {"shape": None, "dtype": "float32"}


def test_an_axis_the_definition_does_not_name_is_the_cases_own_parameter(tmp_path: Path) -> None:
    # SOL-ExecBench's published workloads give such axes (`is_joint_block`) for their custom inputs entrypoint.
    folder = write_definition_folder(tmp_path / "rms", definition(), [case("c1", 2, axes={"batch": 2, "joint": 1})])
    _, item = read_definition_folder(folder)

    assert [c.axes for c in item.cases] == [{"batch": 2, "joint": 1}]


def test_the_reference_beside_the_definition_is_filled_in(tmp_path: Path) -> None:
    folder = write_definition_folder(tmp_path / "rms", definition(reference=None), [case("c1", 2)], REFERENCE)
    workload, _ = read_definition_folder(folder)
    document = workload.value["spec"]["definition"]["document"]
    assert document["reference"] == REFERENCE
    assert document == definition()  # the same document as with the reference inline, so the same digest
    inline, _ = read_definition_folder(write_definition_folder(tmp_path / "inline", definition(), [case("c1", 2)]))
    assert inline.digest == workload.digest


def test_an_inline_reference_wins_over_reference_py(tmp_path: Path) -> None:
    folder = write_definition_folder(tmp_path / "rms", definition(), [case("c1", 2)], "def run(x, eps):\n    pass\n")
    workload, _ = read_definition_folder(folder)
    assert workload.value["spec"]["definition"]["document"]["reference"] == REFERENCE


def test_cases_wrapped_as_traces_are_unwrapped(tmp_path: Path) -> None:
    flat = case("c1", 2)
    folder = write_definition_folder(tmp_path / "rms", definition(), [{"definition": "rms_norm_h64", "workload": flat}])
    workload, item = read_definition_folder(folder)
    assert workload.value["spec"]["cases"] == [flat]
    assert item.cases[0].uuid == "c1"


def test_the_adapter_yields_the_document_before_the_definition(tmp_path: Path) -> None:
    folder = write_definition_folder(tmp_path / "rms", definition(), [case("c1", 2)])
    items = list(DefinitionFolderAdapter().read(folder))
    assert [type(item) for item in items] == [DocumentItem, DefinitionItem]


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"inputs": {"x": {"shape": ["rows", "width"], "dtype": "float32"}}}, "inputs.x.shape.1", "unknown axis"),
        ({"axes": {"batch": {"type": "const"}}}, "axes.batch", "const axis needs an integer value"),
        ({"axes": {"batch": {"type": "expr"}}}, "axes.batch", "expr axis needs an expression"),
        ({"axes": {"batch": {"type": "dynamic"}}}, "axes.batch.type", "'const', 'var' or 'expr'"),
        ({"outputs": {}}, "outputs", "at least 1"),
        ({"name": None}, "name", "Field required"),
        ({"custom_inputs_entrypoint": "make inputs"}, "custom_inputs_entrypoint", "pattern"),
    ],
)
def test_a_bad_definition_names_the_file_and_field(
    tmp_path: Path, changes: dict[str, Any], field: str, message: str
) -> None:
    document = definition(**changes)
    if "axes" in changes:
        document["axes"] = {**definition()["axes"], **changes["axes"]}
    folder = write_definition_folder(tmp_path / "rms", document, [case("c1", 2)])
    with pytest.raises(RecordError) as raised:
        read_definition_folder(folder)
    assert raised.value.path == str(folder / "definition.json")
    assert raised.value.field == field
    assert message in raised.value.message


@pytest.mark.parametrize(
    ("bad_case", "field", "message"),
    [
        (case("c2", 4, axes={}), "axes.batch", "every var axis needs a value"),
        (case("c2", 4, axes={"batch": 4, "hidden": 64}), "axes.hidden", "not a var axis"),
        (case("c2", 4, axes={"batch": 4, "rows": 4}), "axes.rows", "which fixes it"),
        (case("c2", 4, axes={"batch": "4"}), "axes.batch", "valid integer"),
        (case("c2", 4, inputs={"z": {"type": "random"}}), "inputs.z", "not an input of the definition"),
        (case("c2", 4, inputs={"x": {"type": "custom"}}), "inputs.x", "custom_inputs_entrypoint"),
        (case("c2", 4, inputs={"eps": {"type": "scalar"}}), "inputs.eps", "numeric value"),
        (case("c2", 4, tolerance={"max_atol": -1}), "tolerance.max_atol", "greater than or equal to 0"),
        (case("c1", 4), "uuid", "also an earlier case's uuid"),
        ({"definition": "rms_norm_h64", "workload": case("c2", 4, axes={})}, "workload.axes.batch", "var axis"),
        ({"definition": "other", "workload": case("c2", 4)}, "definition", "not this folder's"),
    ],
)
def test_a_bad_case_names_the_file_line_and_field(
    tmp_path: Path, bad_case: dict[str, Any], field: str, message: str
) -> None:
    folder = write_definition_folder(tmp_path / "rms", definition(), [case("c1", 2), bad_case])
    with pytest.raises(RecordError) as raised:
        read_definition_folder(folder)
    assert raised.value.path == str(folder / "workload.jsonl")
    assert raised.value.line == 2
    assert raised.value.field == field
    assert message in raised.value.message


# -- solutions ---------------------------------------------------------------------


def test_a_solution_becomes_an_implementation_with_its_sources_by_digest(tmp_path: Path) -> None:
    value = solution()
    implementation = read_solution(write_solution(tmp_path / "solution.json", value))
    spec = implementation.value["spec"]
    assert implementation.kind == "Implementation"
    assert implementation.name == "rms-norm-fast"
    assert implementation.value["metadata"]["title"] == "rms-norm-fast"
    assert spec["name"] == "rms-norm-fast"
    assert spec["author"] == "someone"
    assert spec["definition"] == "rms_norm_h64"
    assert spec["language"] == "python"
    assert spec["artifacts"] == [
        {"name": "kernel.py", "digest": sha256(value["sources"][0]["content"])},
        {"name": "helpers.py", "digest": sha256(value["sources"][1]["content"])},
    ]
    assert spec["solution"] == value


def test_a_solution_with_several_languages_names_them_all(tmp_path: Path) -> None:
    value = solution(spec={"languages": ["cuda", "cpp"], "entry_point": "kernel.py::run"})
    implementation = read_solution(write_solution(tmp_path / "solution.json", value))
    assert implementation.value["spec"]["language"] == "cuda, cpp"


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"sources": [{"path": "kernel.py", "content": "x"}, {"path": "../evil.py", "content": "x"}]}, "sources.1.path",
         "escapes"),
        ({"sources": [{"path": "kernel.py", "content": "x"}, {"path": "/etc/x.py", "content": "x"}]}, "sources.1.path",
         "absolute"),
        ({"sources": [{"path": "kernel.py", "content": "x"}, {"path": "a\\b.py", "content": "x"}]}, "sources.1.path",
         "forward slashes"),
        ({"sources": [{"path": "kernel.py", "content": "x"}, {"path": "./kernel.py", "content": "y"}]},
         "sources.1.path", "listed twice"),
        ({"sources": [{"path": "kernel.py"}]}, "sources.0.content", "Field required"),
        ({"spec": {"language": "python", "entry_point": "kernel.py"}}, "spec.entry_point", "pattern"),
        ({"spec": {"language": "python"}}, "spec.entry_point", "Field required"),
        ({"spec": {"entry_point": "kernel.py::run"}}, "spec", "language or languages"),
        ({"spec": {"language": "python", "entry_point": "main.py::run"}}, "spec.entry_point", "not among the sources"),
        ({"spec": {"language": "python", "entry_point": "kernel.py::run", "destination_passing_style": "yes"}},
         "spec.destination_passing_style", "valid boolean"),
        ({"name": ""}, "name", "at least 1 character"),
    ],
)  # fmt: skip
def test_a_bad_solution_names_the_file_and_field(
    tmp_path: Path, changes: dict[str, Any], field: str, message: str
) -> None:
    path = write_solution(tmp_path / "solution.json", solution(**changes))
    with pytest.raises(RecordError) as raised:
        read_solution(path)
    assert raised.value.path == str(path)
    assert raised.value.field == field
    assert message in raised.value.message


def test_a_solution_adapter_yields_one_document(tmp_path: Path) -> None:
    path = write_solution(tmp_path / "solution.json", solution())
    (item,) = SolutionAdapter().read(path)
    assert isinstance(item, DocumentItem)
    assert item.sealed.kind == "Implementation"


# -- discovery ---------------------------------------------------------------------


def test_discover_finds_definition_folders_and_solutions_by_content(tmp_path: Path) -> None:
    folder = write_definition_folder(tmp_path / "defs" / "rms", definition(reference=None), [case("c1", 2)], REFERENCE)
    named_otherwise = write_solution(tmp_path / "solutions" / "fast-submission.json", solution())
    write_solution(tmp_path / "solutions" / "notes.json", {"sources": [], "spec": {}})  # no entry point
    units = {unit.path: unit for unit in discover([tmp_path], source="kernelindex")}
    assert type(units[folder].adapter).__name__ == "DefinitionFolderAdapter"
    assert type(units[named_otherwise].adapter).__name__ == "SolutionAdapter"
    assert all(unit.source == "kernelindex" for unit in units.values())
    assert folder / "workload.jsonl" not in units  # the folder is one unit
    with pytest.raises(RecordError, match="cannot tell which source"):
        discover([tmp_path / "solutions" / "notes.json"])


def test_a_file_of_a_definition_folder_names_the_folder(tmp_path: Path) -> None:
    folder = write_definition_folder(tmp_path / "rms", definition(), [case("c1", 2)])
    (unit,) = discover([folder / "definition.json"])
    assert unit.path == folder


def test_a_folder_with_metadata_json_stays_a_sol_execbench_problem(tmp_path: Path) -> None:
    folder = write_definition_folder(tmp_path / "rms", definition(), [case("c1", 2)])
    (folder / "metadata.json").write_text(json.dumps({"task_id": 1, "name": "rms_norm_h64"}))
    (unit,) = discover([folder])
    assert unit.source == "sol-execbench"
    with pytest.raises(RecordError, match="sol-execbench file, not kernelindex"):
        discover([folder], source="kernelindex")


def test_a_name_that_is_no_valid_document_name_is_slugged(tmp_path: Path) -> None:
    implementation = read_solution(write_solution(tmp_path / "solution.json", solution(name="RMS norm (fast)")))
    assert implementation.name == "rms-norm-fast"
    assert implementation.value["metadata"]["title"] == "RMS norm (fast)"
    assert implementation.value["spec"]["name"] == "RMS norm (fast)"


# -- SOL-ExecBench problem folders ----------------------------------------------------


def test_a_sol_execbench_problem_with_its_reference_is_runnable_too(tmp_path: Path) -> None:
    from records.sources.sol_execbench import ProblemAdapter
    from tests.conftest import SAMPLE_DATA

    folder = tmp_path / "8"
    shutil.copytree(SAMPLE_DATA / "sol-execbench" / "problems" / "8", folder)
    (without,) = ProblemAdapter().read(folder)
    assert isinstance(without, DefinitionItem) and without.workload_digest == ""

    (folder / "reference.py").write_text(REFERENCE)
    document, item = ProblemAdapter().read(folder)
    assert isinstance(document, DocumentItem) and isinstance(item, DefinitionItem)
    spec = document.sealed.value["spec"]
    assert spec["definition"]["source"] == "sol-execbench"
    assert spec["definition"]["name"] == item.name
    assert spec["definition"]["document"] == {
        **json.loads((folder / "definition.json").read_text()),
        "reference": REFERENCE,
    }
    assert spec["cases"] == [json.loads(line) for line in (folder / "workload.jsonl").read_text().splitlines()]
    assert item.workload_digest == document.sealed.digest
    assert item.cases == without.cases


def test_a_reference_py_with_a_nul_is_refused(tmp_path: Path) -> None:
    folder = write_definition_folder(tmp_path / "rms", definition(reference=None), [case("c1", 2)], "def run(x):\0\n")
    with pytest.raises(RecordError) as raised:
        read_definition_folder(folder)
    assert raised.value.path == str(folder / "reference.py")
    assert "NUL" in raised.value.message
