"""The reference run as its own solution passes, under each protocol, on published definitions of several kinds.

The definitions are published SOL-ExecBench ones (tests/harness/data/references/,
see its README) with a reference of our own inlined, and one or two of their
published cases, shrunk where a 2-core CPU needs it. Between them they draw
inputs by SOL-ExecBench's name rules (a normalisation weight of ones, weight
matrices, RoPE tables), from a `custom_inputs_entrypoint`, with expression
axes in their shapes, and come from its FlashInfer-Bench subset. A reference
that fails against itself is the harness's fault: the judge, the kernel's
side, the input rules or the correctness rule.
"""

from __future__ import annotations

import json
import math
import types
from pathlib import Path
from typing import Any

import pytest
import torch

from harness.judge.protocols import PROTOCOL_NAMES
from harness.judge.tensors import build_inputs
from harness.parent.formats import Solution, load_definition, load_workload
from harness.parent.job import Inputs, build_job
from tests.harness.conftest import Problem, run_harness, write_solution

REFERENCES = Path(__file__).resolve().parent / "data" / "references"
# The published id (the data pack's folder) and what it exercises.
DEFINITIONS = {
    "73": "RMSNorm (norm_weight: ones) then K/V projections (weight matrices)",
    "10": "a GEMM with a weight matrix whose rows are an expression axis",
    "88": "RoPE on query and key from cos/sin tables",
    "11": "RoPE tables from custom inputs (get_inputs), an expression axis in a shape",
    "234": "FlashInfer-Bench's rmsnorm_h4096",
    "213": "FlashInfer-Bench's gemm_n128_k2048",
}
# The language each source's evaluator takes for a PyTorch solution.
LANGUAGES = {"sol-execbench": "pytorch", "flashinfer-bench": "python", "kernelindex": "python"}


def reference_as_solution(problem: str, folder: Path, protocol: str) -> Path:
    definition = json.loads((REFERENCES / problem / "definition.json").read_text())
    return write_solution(
        folder,
        definition["reference"],
        definition=definition["name"],
        dps=False,
        language=LANGUAGES[protocol],
        entry_point="reference.py::run",
    )


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("problem", list(DEFINITIONS))
def test_the_reference_as_its_own_solution_passes(tmp_path: Path, problem: str, protocol: str) -> None:
    solution = reference_as_solution(problem, tmp_path / "solution", protocol)

    result = run_harness(Problem(REFERENCES / problem), solution, protocol=protocol)

    assert result.status == "PASSED", f"{DEFINITIONS[problem]}: {result.reason}"
    assert [case.status for case in result.cases] == ["PASSED"] * len(result.cases)


# --- the definitions exercise what they were chosen for ------------------------------------------

_ANY_SOLUTION = Solution.model_validate(
    {
        "name": "s",
        "definition": "d",
        "spec": {"language": "python", "entry_point": "m.py::run"},
        "sources": [{"path": "m.py", "content": ""}],
    }
)


def judged_inputs(problem: str, rule: str = "sol-execbench") -> tuple[dict[str, Any], dict[str, Any]]:
    """(the first case as the judge receives it, its inputs as the judge builds them under `rule`)."""
    folder = REFERENCES / problem
    path, definition, source, name = load_definition(folder, None)
    cases = load_workload(folder / "workload.jsonl", definition)
    inputs = Inputs(path, definition, source, name, folder / "workload.jsonl", cases, _ANY_SOLUTION)
    job, _ = build_job(inputs, {}, None, str)
    reference = types.ModuleType("reference")
    exec(compile(source, name, "exec"), reference.__dict__)
    entrypoint = getattr(reference, definition.custom_inputs_entrypoint or "", None)
    case = job["cases"][0]
    return case, build_inputs(case, "cpu", entrypoint, rule=rule)


def test_sol_execbench_draws_the_norm_weight_as_ones_and_the_projections_scaled_by_fan_in() -> None:
    _, inputs = judged_inputs("73")

    assert torch.equal(inputs["norm_weight"], torch.ones(1024, dtype=torch.float16))
    for name in ("k_proj_weight", "v_proj_weight"):
        assert float(inputs[name].float().std()) == pytest.approx(1 / math.sqrt(1024), rel=0.05)


def test_the_gemms_weight_has_the_rows_its_expression_axis_gives() -> None:
    case, inputs = judged_inputs("10")

    assert case["axes"]["kv_projection_size"] == 8 * 128
    assert list(inputs["v_proj_weight"].shape) == [1024, 5120]
    assert float(inputs["v_proj_weight"].float().std()) == pytest.approx(1 / math.sqrt(5120), rel=0.05)


def test_the_rope_tables_are_cosines_and_sines() -> None:
    _, inputs = judged_inputs("88")

    # Each of an angle of its own, as SOL-ExecBench draws them: cos² + sin² is not 1.
    assert float(inputs["cos"].abs().max()) <= 1 and float(inputs["sin"].abs().max()) <= 1
    assert float(inputs["cos"].mean()) == pytest.approx(math.exp(-0.5), abs=0.05)


@pytest.mark.parametrize("rule", ["sol-execbench", "kernelindex"])
def test_custom_inputs_come_from_the_references_entrypoint_whatever_the_rule(rule: str) -> None:
    case, inputs = judged_inputs("11", rule)

    assert case["axes"]["half_head_dim"] == 64
    positions = inputs["position_ids"]
    assert positions.dtype == torch.int64 and list(positions.shape) == [1, 613]
    assert torch.equal(positions.diff(), torch.ones(1, 612, dtype=torch.int64))
    assert list(inputs["inv_freq"].shape) == [64]
    assert inputs["attention_scaling"] == 1.0
