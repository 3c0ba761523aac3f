"""Solutions as both sources write them load; what a host lacks for a language is a COMPILE_ERROR naming it.

SOL-ExecBench writes `languages` (a list) with `target_hardware` and `author`;
FlashInfer-Bench one `language`. This host is a CPU: CUDA, CUTLASS's CuTe DSL
and Triton are missing, and the reason says which.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from harness.kernel.loading import LoadError, load_solution
from harness.parent.formats import LANGUAGES
from tests.harness.conftest import CORRECT_ADD, Problem, run_harness

CUDA_ADD = """
#include <torch/extension.h>
void run(torch::Tensor x, torch::Tensor y, torch::Tensor out) { out.copy_(x + y); }
"""
CUTE_ADD = """
import cutlass.cute as cute

def run(x, y, out):
    out.copy_(x + y)
"""
TRITON_ADD = """
import triton

def run(x, y, out):
    out.copy_(x + y)
"""


def sol_solution(folder: Path, languages: list[str], entry: str, code: str) -> Path:
    """A solution.json as SOL-ExecBench writes one (src/sol_execbench/core/data/solution.py)."""
    spec = {"languages": languages, "target_hardware": ["B200", "LOCAL"], "entry_point": f"{entry}::run"}
    return _write(folder, {"author": "tests", "spec": {**spec, "dependencies": [], "binding": None}}, entry, code)


def fib_solution(folder: Path, language: str, entry: str, code: str) -> Path:
    """A solution.json as FlashInfer-Bench writes one (flashinfer_bench/data/solution.py)."""
    spec = {"language": language, "target_hardware": ["cuda"], "entry_point": f"{entry}::run", "dependencies": []}
    return _write(folder, {"author": "tests", "spec": spec}, entry, code)


def _write(folder: Path, parts: dict[str, Any], entry: str, code: str) -> Path:
    folder.mkdir(parents=True)
    document = {"name": folder.name, "definition": "add_rows", **parts}
    document["sources"] = [{"path": entry, "content": textwrap.dedent(code)}]
    path = folder / "solution.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    ("write", "status", "reason"),
    [
        (lambda d: sol_solution(d, ["pytorch"], "kernel.py", CORRECT_ADD), "PASSED", None),
        (
            lambda d: sol_solution(d, ["cuda_cpp"], "kernel.cu", CUDA_ADD),
            "COMPILE_ERROR",
            "a cuda_cpp solution is built for a CUDA device; this evaluation runs on cpu",
        ),
        (
            lambda d: sol_solution(d, ["cute_dsl"], "kernel.py", CUTE_ADD),
            "COMPILE_ERROR",
            "a cute_dsl solution needs the Python package 'cutlass' (nvidia-cutlass-dsl), "
            "which this host cannot import",
        ),
        (
            lambda d: fib_solution(d, "cuda", "kernel.cu", CUDA_ADD),
            "COMPILE_ERROR",
            "a cuda solution is built for a CUDA device; this evaluation runs on cpu",
        ),
        (
            lambda d: fib_solution(d, "triton", "kernel.py", TRITON_ADD),
            "COMPILE_ERROR",
            "a triton solution needs the Python package 'triton' (triton), which this host cannot import",
        ),
    ],
    ids=["sol-pytorch", "sol-cuda_cpp", "sol-cute_dsl", "fib-cuda", "fib-triton"],
)
def test_each_sources_solution_loads_and_a_missing_toolchain_is_named(
    add_problem: Problem, tmp_path: Path, write: Any, status: str, reason: str | None
) -> None:
    result = run_harness(add_problem, write(tmp_path / "solution"))

    assert (result.status, result.reason) == (status, reason)


def loader_job(folder: Path, languages: list[str], entry_file: str) -> dict[str, Any]:
    entries = [asdict(LANGUAGES[name]) for name in languages]
    return {"solution": {"dir": str(folder), "languages": entries, "entry_file": entry_file, "entry_function": "run"}}


@pytest.mark.parametrize(
    ("language", "missing"),
    [
        ("cutile", "'cuda.tile' (cuda-tile)"),
        ("cudnn_frontend", "'cudnn' (nvidia-cudnn-frontend)"),
        ("tilelang", "'tilelang' (tilelang)"),
    ],
)
def test_the_loader_names_a_python_package_the_host_cannot_import(tmp_path: Path, language: str, missing: str) -> None:
    (tmp_path / "kernel.py").write_text("def run(x, out):\n    out.copy_(x)\n")

    with pytest.raises(LoadError) as raised:
        load_solution(loader_job(tmp_path, [language], "kernel.py"), "cpu", tmp_path / "build")
    assert raised.value.status == "COMPILE_ERROR"
    assert f"needs the Python package {missing}" in raised.value.reason


@pytest.mark.parametrize("language", ["cutlass", "cudnn", "cublas", "cpp"])
def test_the_loader_refuses_to_build_for_a_cpu(tmp_path: Path, language: str) -> None:
    (tmp_path / "main.cpp").write_text(CUDA_ADD)

    with pytest.raises(LoadError) as raised:
        load_solution(loader_job(tmp_path, [language], "main.cpp"), "cpu", tmp_path / "build")
    assert raised.value.reason == f"a {language} solution is built for a CUDA device; this evaluation runs on cpu"


def test_a_python_solution_imports_its_entry_file(tmp_path: Path) -> None:
    (tmp_path / "kernel.py").write_text("def run(x, out):\n    out.copy_(x)\n")

    assert callable(load_solution(loader_job(tmp_path, ["python"], "kernel.py"), "cpu", tmp_path / "build"))
