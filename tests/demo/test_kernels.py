"""The demo's kernels do what the demo says: fast and naive solutions match the reference, wrong ones do not.

Each solution is called once per case on real tensors built from the case, as
a harness would build them (random inputs, scalars, the definition's custom
inputs entrypoint), and checked element by element against the reference
within the case's tolerance.
"""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

DEMO = Path(__file__).resolve().parent.parent.parent / "demo"
# Where a case states no tolerance: tight enough for the correct kernels, loose enough that a wrong one must be
# wrong by far to fail it.
PASSING_DEFAULT = {"max_atol": 1e-5, "max_rtol": 1e-5}
FAILING_DEFAULT = {"max_atol": 1e-2, "max_rtol": 1e-2}
WRONG = {"rmsnorm-eps-1e-2", "softmax-exp2", "swiglu-gelu", "gemm-bf16"}


def load(code: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(code, name, "exec"), module.__dict__)
    return module


def definition_of(folder: Path) -> dict[str, Any]:
    definition: dict[str, Any] = json.loads((folder / "definition.json").read_text())
    if not definition.get("reference"):
        definition["reference"] = (folder / "reference.py").read_text()
    return definition


def cases_of(folder: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in (folder / "workload.jsonl").read_text().splitlines() if line.strip()]
    return [line.get("workload", line) for line in lines]


def axes_of(definition: dict[str, Any], case: dict[str, Any]) -> dict[str, int]:
    axes = {name: axis["value"] for name, axis in definition["axes"].items() if axis["type"] == "const"}
    axes |= case["axes"]
    for name, axis in definition["axes"].items():
        if axis["type"] == "expr":
            axes[name] = eval(axis["expression"], {"__builtins__": {}}, dict(axes))
    return axes


def inputs_of(definition: dict[str, Any], case: dict[str, Any], reference: types.ModuleType) -> dict[str, Any]:
    torch.manual_seed(0)
    axes = axes_of(definition, case)
    if definition.get("custom_inputs_entrypoint"):
        made: dict[str, Any] = getattr(reference, definition["custom_inputs_entrypoint"])(axes, "cpu")
        return {name: made[name] for name in definition["inputs"]}
    inputs: dict[str, Any] = {}
    for name, tensor in definition["inputs"].items():
        source = case["inputs"][name]
        if source["type"] == "scalar":
            inputs[name] = source["value"]
        else:
            inputs[name] = torch.randn(*[axes[axis] for axis in tensor["shape"]], dtype=getattr(torch, tensor["dtype"]))
    return inputs


def call(solution: dict[str, Any], inputs: dict[str, Any], expected: Any) -> Any:
    path, function = solution["spec"]["entry_point"].split("::")
    sources = {source["path"]: source["content"] for source in solution["sources"]}
    entry = getattr(load(sources[path], path), function)
    if solution["spec"].get("destination_passing_style", True):
        output = torch.empty_like(expected)
        entry(*inputs.values(), output)
        return output
    return entry(*inputs.values())


def within(got: Any, expected: Any, tolerance: dict[str, float]) -> bool:
    if got.shape != expected.shape or got.dtype != expected.dtype or not torch.isfinite(got).all():
        return False
    bound = tolerance["max_atol"] + tolerance["max_rtol"] * expected.abs()
    return bool(((got - expected).abs() <= bound).all())


SOLUTIONS = sorted((DEMO / "solutions").glob("*/*/solution.json"))


@pytest.mark.parametrize("path", SOLUTIONS, ids=[f"{p.parent.parent.name}/{p.parent.name}" for p in SOLUTIONS])
def test_each_solution_is_as_correct_as_the_demo_says(path: Path) -> None:
    solution = json.loads(path.read_text())
    folder = DEMO / "definitions" / solution["definition"]
    definition = definition_of(folder)
    reference = load(definition["reference"], "reference.py")
    wrong = solution["name"] in WRONG
    verdicts = []
    for case in cases_of(folder):
        inputs = inputs_of(definition, case, reference)
        expected = reference.run(**inputs)
        got = call(solution, inputs, expected)
        tolerance = case.get("tolerance") or (FAILING_DEFAULT if wrong else PASSING_DEFAULT)
        verdicts.append(within(got, expected, tolerance))
    if wrong:
        assert not all(verdicts), f"{solution['name']} should fail at least one case"
    else:
        assert all(verdicts), f"{solution['name']} should pass every case: {verdicts}"
