"""Small problems and solutions written into a test's folder, and a way to evaluate them.

The standard problem adds two float32 matrices of shape (n, 4) over two cases;
a test writes the solution it needs as Python source. Evaluations run through
the real sandbox, with 1 warm-up and 3 timed iterations unless a test times.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness import evaluate
from harness.parent.results import EvaluationResult

ADD_REFERENCE = """
import torch

def run(x, y):
    return x + y
"""
ADD_DEFINITION: dict[str, Any] = {
    "name": "add_rows",
    "description": "x + y",
    "op_type": "elementwise",
    "axes": {"n": {"type": "var"}, "width": {"type": "const", "value": 4}},
    "inputs": {"x": {"shape": ["n", "width"], "dtype": "float32"}, "y": {"shape": ["n", "width"], "dtype": "float32"}},
    "outputs": {"out": {"shape": ["n", "width"], "dtype": "float32"}},
}
ADD_CASES: list[dict[str, Any]] = [
    {"uuid": "case-small", "axes": {"n": 3}, "inputs": {"x": {"type": "random"}, "y": {"type": "random"}}},
    {"uuid": "case-large", "axes": {"n": 64}, "inputs": {"x": {"type": "random"}, "y": {"type": "random"}}},
]
CORRECT_ADD = """
import torch

def run(x, y, out):
    torch.add(x, y, out=out)
"""


class Problem:
    """A definition folder and its workload, written to disk."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.definition = folder / "definition.json"
        self.workload = folder / "workload.jsonl"


def write_problem(
    folder: Path,
    definition: dict[str, Any] | None = None,
    cases: list[dict[str, Any]] | None = None,
    reference: str = ADD_REFERENCE,
    reference_beside: bool = False,
) -> Problem:
    folder.mkdir(parents=True, exist_ok=True)
    document = dict(definition or ADD_DEFINITION)
    if reference_beside:
        (folder / "reference.py").write_text(textwrap.dedent(reference))
    else:
        document["reference"] = textwrap.dedent(reference)
    (folder / "definition.json").write_text(json.dumps(document, indent=2))
    lines = [json.dumps(case) for case in (cases if cases is not None else ADD_CASES)]
    (folder / "workload.jsonl").write_text("\n".join(lines) + "\n")
    return Problem(folder)


def write_solution(
    folder: Path,
    code: str,
    *,
    definition: str = "add_rows",
    dps: bool = True,
    language: str = "python",
    entry_point: str = "main.py::run",
    extra_sources: dict[str, str] | None = None,
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    sources = [{"path": entry_point.split("::")[0], "content": textwrap.dedent(code)}]
    sources += [{"path": path, "content": textwrap.dedent(text)} for path, text in (extra_sources or {}).items()]
    document = {
        "name": f"{definition}-{folder.name}",
        "definition": definition,
        "author": "tests",
        "description": "a test solution",
        "spec": {
            "language": language,
            "target_hardware": ["cpu"],
            "entry_point": entry_point,
            "destination_passing_style": dps,
            "dependencies": [],
        },
        "sources": sources,
    }
    path = folder / "solution.json"
    path.write_text(json.dumps(document, indent=2))
    return path


def run_harness(problem: Problem, solution: Path, **options: Any) -> EvaluationResult:
    options.setdefault("warmup", 1)
    options.setdefault("iterations", 3)
    options.setdefault("timeout", 120)
    return evaluate(problem.definition, problem.workload, solution, **options)


@pytest.fixture
def add_problem(tmp_path: Path) -> Problem:
    return write_problem(tmp_path / "problem")


def assert_next_evaluation_works(problem: Problem, folder: Path) -> None:
    """After a solution that failed or attacked, the same process evaluates a good one normally."""
    result = run_harness(problem, write_solution(folder / "good-after", CORRECT_ADD))
    assert result.status == "PASSED", result.reason
    assert [case.status for case in result.cases] == ["PASSED"] * len(result.cases)
