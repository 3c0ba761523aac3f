"""The public formats: both reference layouts, custom, scalar and safetensors inputs, expression axes,
destination-passing and value-returning solutions, traces, and the published sample problems."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
import torch

from harness.judge.tensors import build_inputs, read_safetensors
from harness.parent.errors import HarnessInputError
from harness.parent.formats import Solution, load_definition, load_workload
from harness.parent.job import Inputs, build_job, case_seed
from tests.conftest import SAMPLE_DATA
from tests.harness.conftest import (
    ADD_CASES,
    ADD_DEFINITION,
    ADD_REFERENCE,
    CORRECT_ADD,
    Problem,
    run_harness,
    write_problem,
    write_solution,
)


def test_the_reference_may_sit_beside_the_definition(tmp_path: Path) -> None:
    problem = write_problem(tmp_path / "problem", reference_beside=True)

    assert "reference" not in json.loads(problem.definition.read_text())
    assert run_harness(problem, write_solution(tmp_path / "s", CORRECT_ADD)).status == "PASSED"


def test_a_reference_given_on_the_command_line_replaces_the_definitions(tmp_path: Path) -> None:
    problem = write_problem(tmp_path / "problem", reference="def run(x, y):\n    return x - y\n")
    reference = tmp_path / "add.py"
    reference.write_text(ADD_REFERENCE)

    assert run_harness(problem, write_solution(tmp_path / "s", CORRECT_ADD), reference=reference).status == "PASSED"


def test_a_value_returning_solution(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(tmp_path / "s", "def run(x, y):\n    return x + y\n", dps=False)

    assert run_harness(add_problem, solution).status == "PASSED"


def test_an_axis_of_the_cases_own_reaches_the_custom_inputs_entrypoint(tmp_path: Path) -> None:
    # As in SOL-ExecBench's published workloads: `is_joint_block` is no axis of the definition, and the
    # reference's get_inputs reads it.
    definition = {**ADD_DEFINITION, "custom_inputs_entrypoint": "make_inputs"}
    reference = """
    import torch

    def make_inputs(axes_and_scalars, device):
        n, width = axes_and_scalars["n"], axes_and_scalars["width"]
        scale = 2.0 if axes_and_scalars["joint"] else 1.0
        return {"x": torch.ones(n, width, device=device) * scale, "y": torch.zeros(n, width, device=device)}

    def run(x, y):
        return x + y
    """
    custom = {"x": {"type": "custom"}, "y": {"type": "custom"}}
    cases = [{"uuid": f"joint-{flag}", "axes": {"n": 3, "joint": flag}, "inputs": custom} for flag in (0, 1)]
    problem = write_problem(tmp_path / "problem", definition=definition, cases=cases, reference=reference)
    # Right only where the axis reached the entrypoint: 2 where joint is 1, else 1.
    solution = write_solution(tmp_path / "s", "def run(x, y, out):\n    out.copy_(x + y)\n")
    wrong = write_solution(tmp_path / "w", "def run(x, y, out):\n    out.fill_(1.0)\n")

    assert run_harness(problem, solution).status == "PASSED"
    assert [case.status for case in run_harness(problem, wrong).cases] == ["PASSED", "INCORRECT_NUMERICAL"]


def test_a_definition_with_packed_four_bit_float_inputs_is_judged(tmp_path: Path) -> None:
    # SOL-ExecBench's nvfp4 problems: torch fills no float4_e2m1fn_x2 tensor on the CPU, and the judge's
    # calibration once did, so every such evaluation ended in the judge's own failure.
    definition = {
        **ADD_DEFINITION,
        "name": "fp4_bytes",
        "axes": {"n": {"type": "var"}, "width": {"type": "const", "value": 1024}},
        "inputs": {"x": {"shape": ["n", "width"], "dtype": "float4_e2m1fn_x2"}},
        "outputs": {"bytes": {"shape": ["n", "width"], "dtype": "uint8"}},
    }
    # Large enough that torch fills rather than allocates zeroed memory.
    cases = [{"uuid": "fp4", "axes": {"n": 1024}, "inputs": {"x": {"type": "random"}}}]
    reference = "import torch\n\ndef run(x):\n    return x.view(torch.uint8).clone()\n"
    problem = write_problem(tmp_path / "problem", definition=definition, cases=cases, reference=reference)
    solution = write_solution(
        tmp_path / "s", "import torch\n\ndef run(x, out):\n    out.copy_(x.view(torch.uint8))\n", definition="fp4_bytes"
    )

    result = run_harness(problem, solution)
    assert result.status == "PASSED", result.reason


def test_custom_inputs_come_from_the_references_entrypoint(tmp_path: Path) -> None:
    definition = {**ADD_DEFINITION, "custom_inputs_entrypoint": "make_inputs"}
    definition["inputs"] = {**ADD_DEFINITION["inputs"], "offset": {"shape": None, "dtype": "float32"}}
    reference = """
    import torch

    def make_inputs(axes_and_scalars, device):
        n, width = axes_and_scalars["n"], axes_and_scalars["width"]
        x = torch.arange(n * width, dtype=torch.float32, device=device).reshape(n, width)
        y = torch.full((n, width), axes_and_scalars["offset"], device=device)
        return {"x": x, "y": y}

    def run(x, y, offset):
        return x + y
    """
    cases = [
        {
            "uuid": "custom",
            "axes": {"n": 5},
            "inputs": {"x": {"type": "custom"}, "y": {"type": "custom"}, "offset": {"type": "scalar", "value": 0.5}},
        }
    ]
    problem = write_problem(tmp_path / "problem", definition=definition, cases=cases, reference=reference)
    solution = write_solution(
        tmp_path / "s",
        """
        import torch

        def run(x, y, offset, out):
            expected_x = torch.arange(20, dtype=torch.float32).reshape(5, 4)
            if not torch.equal(x, expected_x) or not bool((y == offset).all()):
                raise ValueError("these are not the entrypoint's inputs")
            torch.add(x, y, out=out)
        """,
    )

    result = run_harness(problem, solution)
    assert result.status == "PASSED", result.reason


def test_expression_axes_and_scalar_inputs_and_outputs(tmp_path: Path) -> None:
    definition = {
        "name": "heads",
        "axes": {
            "n": {"type": "var"},
            "hidden": {"type": "const", "value": 8},
            "heads": {"type": "const", "value": 2},
            "head_dim": {"type": "expr", "expression": "hidden // heads"},
        },
        "inputs": {
            "x": {"shape": ["n", "heads", "head_dim"], "dtype": "float32"},
            "scale": {"shape": None, "dtype": "float32"},
        },
        "outputs": {
            "flat": {"shape": ["n", "hidden"], "dtype": "float32"},
            "total": {"shape": None, "dtype": "float32"},
            "peak": {"shape": [], "dtype": "float32"},
        },
    }
    reference = """
    def run(x, scale):
        flat = x.reshape(x.shape[0], -1) * scale
        return flat, float(flat.sum()), flat.max()
    """
    cases = [
        {"uuid": "e", "axes": {"n": 3}, "inputs": {"x": {"type": "random"}, "scale": {"type": "scalar", "value": 2}}}
    ]
    problem = write_problem(tmp_path / "problem", definition=definition, cases=cases, reference=reference)
    returning = write_solution(
        tmp_path / "returning",
        """
        def run(x, scale):
            assert x.shape == (3, 2, 4) and scale == 2
            flat = x.reshape(3, 8) * scale
            return flat, flat.sum().item(), flat.max()
        """,
        definition="heads",
        dps=False,
    )
    passing_outputs = write_solution(
        tmp_path / "dps",
        """
        def run(x, scale, flat, total, peak):
            flat.copy_(x.reshape(3, 8) * scale)
            total.fill_(flat.sum())
            peak.copy_(flat.max())
        """,
        definition="heads",
    )

    assert run_harness(problem, returning).status == "PASSED"
    assert run_harness(problem, passing_outputs).status == "PASSED"


def test_safetensors_inputs_are_read_and_a_missing_file_fails_only_its_case(tmp_path: Path) -> None:
    data = tmp_path / "dataset" / "blob" / "indices.safetensors"
    data.parent.mkdir(parents=True)
    write_safetensors(data, {"y": torch.arange(12, dtype=torch.float32).reshape(3, 4)})
    from_file = {"type": "safetensors", "path": "blob/indices.safetensors", "tensor_key": "y"}
    missing = {"type": "safetensors", "path": "blob/absent.safetensors", "tensor_key": "y"}
    cases = [
        {"uuid": "present", "axes": {"n": 3}, "inputs": {"x": {"type": "random"}, "y": from_file}},
        {"uuid": "absent", "axes": {"n": 3}, "inputs": {"x": {"type": "random"}, "y": missing}},
    ]
    problem = write_problem(tmp_path / "dataset" / "problem", cases=cases)
    solution = write_solution(
        tmp_path / "s",
        """
        import torch

        def run(x, y, out):
            if not torch.equal(y, torch.arange(12, dtype=torch.float32).reshape(3, 4)):
                raise ValueError("not the file's tensor")
            torch.add(x, y, out=out)
        """,
    )
    result = run_harness(problem, solution)

    # A data file the host lacks is the evaluation's fault, never the kernel's: no conviction.
    assert [case.status for case in result.cases] == ["PASSED", "HARNESS_ERROR"]
    assert result.cases[1].reason == (
        "input 'y': safetensors file 'blob/absent.safetensors' not found (looked beside the workload and above it)"
    )


def test_a_workload_line_may_be_a_trace_wrapping_the_case(tmp_path: Path) -> None:
    problem = write_problem(tmp_path / "problem")
    traces = [json.dumps({"definition": "add_rows", "workload": case}) for case in ADD_CASES]
    problem.workload.write_text("\n".join(traces) + "\n")

    result = run_harness(problem, write_solution(tmp_path / "s", CORRECT_ADD))
    assert [case.uuid for case in result.cases] == ["case-small", "case-large"]
    assert result.status == "PASSED"


def test_inputs_are_the_same_for_every_build_of_a_case_and_differ_between_cases() -> None:
    case = {
        "uuid": "u",
        "seed": case_seed("add_rows", "u"),
        "axes": {"n": 4},
        "inputs": {
            "a": {"source": "random", "shape": [4, 3], "dtype": "bfloat16"},
            "i": {"source": "random", "shape": [4], "dtype": "int32"},
            "m": {"source": "random", "shape": [4], "dtype": "bool"},
        },
    }
    first, second = build_inputs(case, "cpu", None), build_inputs(case, "cpu", None)
    other = build_inputs({**case, "seed": case_seed("add_rows", "v")}, "cpu", None)

    assert all(torch.equal(first[name], second[name]) for name in first)
    assert not torch.equal(first["a"], other["a"])
    assert (first["a"].dtype, first["i"].dtype, first["m"].dtype) == (torch.bfloat16, torch.int32, torch.bool)


def test_every_published_sample_problem_reads_into_concrete_shapes() -> None:
    solution = Solution.model_validate(
        {
            "name": "s",
            "definition": "d",
            "spec": {"language": "python", "entry_point": "m.py::run"},
            "sources": [{"path": "m.py", "content": ""}],
        }
    )
    problems = sorted((SAMPLE_DATA / "sol-execbench" / "problems").iterdir())
    assert problems
    for folder in problems:
        # The published definitions come without their reference; any file stands in for it.
        path, definition, source, name = load_definition(folder, folder / "metadata.json")
        cases = load_workload(folder / "workload.jsonl", definition)
        inputs = Inputs(path, definition, source, name, folder / "workload.jsonl", cases, solution)
        job, _ = build_job(inputs, {}, None, str)
        for case in job["cases"]:
            for spec in [*case["inputs"].values(), *case["outputs"].values()]:
                assert spec["shape"] is None or all(isinstance(size, int) and size >= 0 for size in spec["shape"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"uuid": "a", "axes": {}}',
            "workload.jsonl, line 1, field axes.n: missing: every var axis needs a value",
        ),
        ("{not json", "workload.jsonl, line 1: not JSON: Expecting property name enclosed in double quotes"),
        (
            '{"uuid": "a", "axes": {"n": 1}, "inputs": {"x": {"type": "scalar"}}}',
            "workload.jsonl, line 1, field inputs.x: Value error, a scalar input needs a numeric value",
        ),
    ],
)
def test_a_bad_workload_line_is_refused_naming_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    problem = write_problem(tmp_path / "problem", cases=[])
    problem.workload.write_text(line + "\n")

    with pytest.raises(HarnessInputError) as raised:
        load_workload(problem.workload, load_definition(problem.definition, None)[1])
    assert str(raised.value) == f"{problem.workload.parent}/{message}"


def test_the_safetensors_reader_reads_what_the_format_says(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    tensors = {"a": torch.randn(2, 3).bfloat16(), "b": torch.tensor([1, 2, 3], dtype=torch.int64)}
    write_safetensors(path, tensors)

    assert torch.equal(read_safetensors(path, "a"), tensors["a"])
    assert torch.equal(read_safetensors(path, "b"), tensors["b"])
    with pytest.raises(KeyError, match="it holds a, b"):
        read_safetensors(path, "c")


_NAMES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32"}


def write_safetensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """The format written out by hand: a little-endian u64 header length, the JSON header, then the bytes."""
    header: dict[str, Any] = {}
    blobs, offset = [], 0
    for name, tensor in tensors.items():
        blob = _raw_bytes(tensor)
        header[name] = {
            "dtype": _NAMES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def _raw_bytes(tensor: torch.Tensor) -> bytes:
    return bytes(tensor.contiguous().reshape(-1).view(torch.uint8).tolist())


def test_a_published_problem_folder_runs_with_its_reference_beside_it(tmp_path: Path) -> None:
    # SOL-ExecBench problem 213 (a GEMM from FlashInfer-Bench, cases without a tolerance), as published,
    # with a reference.py written from its description: C = A @ B.T.
    published = SAMPLE_DATA / "sol-execbench" / "problems" / "213"
    folder = tmp_path / "213"
    folder.mkdir()
    (folder / "definition.json").write_text((published / "definition.json").read_text())
    small = [
        line for line in (published / "workload.jsonl").read_text().splitlines() if json.loads(line)["axes"]["M"] <= 64
    ]
    (folder / "workload.jsonl").write_text("\n".join(small[:3]) + "\n")
    (folder / "reference.py").write_text("def run(A, B):\n    return A @ B.T\n")
    solution = write_solution(
        tmp_path / "s",
        """
        def run(A, B):
            # Accumulated in float32 and rounded once: not bit for bit the reference's result.
            return (A.float() @ B.float().T).half()
        """,
        definition="004_gemm_n128_k2048",
        dps=False,
    )
    result = run_harness(Problem(folder), solution)

    assert result.status == "PASSED", result.reason
    assert len(result.cases) == 3
