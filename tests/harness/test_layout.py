"""harness/ is laid out by the process each module runs in, and the kernel's side, where untrusted code runs,
imports only itself and the wire: starting a solution loads none of the parent's orchestration, the jail or the
judge (harness/README.md, "Layout")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.harness.conftest import Problem, run_harness, write_solution
from tests.harness.imports import reachable_modules

KERNEL_ENTRY = "harness.kernel.__main__"
JUDGE_ENTRY = "harness.judge.__main__"

# A solution that answers its first call and, on the next, fails with the harness modules its process holds: the
# kernel's process as the harness starts it (sandboxed, from its entry module), after the solution was loaded,
# called and its returned output read back.
REPORTS_ITS_MODULES = """
import sys

calls = []

def run(x, y):
    calls.append(1)
    if len(calls) > 1:
        loaded = sorted(name for name in sys.modules if name == "harness" or name.startswith("harness."))
        raise RuntimeError("harness modules: " + " ".join(loaded) + " (end)")
    return x + y
"""


def kernel_side(name: str) -> bool:
    """Whether a module is one the kernel's process may hold: the package itself, the kernel side's, the wire's."""
    return name == "harness" or name.split(".")[:2] in (["harness", "kernel"], ["harness", "wire"])


def test_the_kernel_side_imports_only_itself_and_the_wire() -> None:
    reachable = reachable_modules(KERNEL_ENTRY)
    assert "harness.kernel.process" in reachable and "harness.wire.exchange" in reachable
    assert sorted(name for name in reachable if not kernel_side(name)) == []


def test_the_wire_imports_no_other_side() -> None:
    for module in Path(__file__).resolve().parents[2].joinpath("harness", "wire").glob("*.py"):
        name = f"harness.wire.{module.stem}"
        assert sorted(found for found in reachable_modules(name) if not found.startswith("harness.wire")) == []


def test_the_judge_imports_nothing_of_the_kernel_side() -> None:
    # The judge reaches each served process through the wire alone; it runs none of the code that serves a solution.
    assert sorted(name for name in reachable_modules(JUDGE_ENTRY) if name.startswith("harness.kernel")) == []


@pytest.mark.parametrize("entry", [KERNEL_ENTRY, JUDGE_ENTRY])
def test_the_processes_entry_modules_are_where_the_sandbox_starts_them(entry: str) -> None:
    from harness.jail import sandbox

    started = entry.removesuffix(".__main__")
    assert f'"{started}"' in Path(sandbox.__file__).read_text(encoding="utf-8")


def test_the_kernels_process_holds_only_its_side_and_the_wire(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(tmp_path / "s", REPORTS_ITS_MODULES, dps=False)

    result = run_harness(add_problem, solution)

    found = re.search(r"RuntimeError: harness modules: (.*?) \(end\)", result.reason or "")
    assert result.status == "RUNTIME_ERROR" and found, result.reason
    loaded = found.group(1).split()
    # Loaded by then: the solution (harness.kernel.loading) and the reading of its returned output (harness.wire).
    assert {"harness.kernel.process", "harness.kernel.loading", "harness.wire.outputs"} <= set(loaded)
    assert [name for name in loaded if not kernel_side(name)] == []
