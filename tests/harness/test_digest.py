"""harness_digest covers every harness and records module the harness's processes load, and no records module
they do not: a result's digest names all the code that judged it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import digested_files
from harness.jail.sandbox import Workspace, environment_for, python_executable

REPO = Path(__file__).resolve().parents[2]
OWN_PACKAGES = ("harness", "records")
RMSNORM = REPO / "demo" / "definitions" / "rmsnorm_h2048"
VECTORISED = REPO / "demo" / "solutions" / "rmsnorm_h2048" / "rmsnorm-vectorised" / "solution.json"
# The processes the sandbox starts, by their entry module, and the role each is started as.
SANDBOXED = {"harness.judge.__main__": "judge", "harness.kernel.__main__": "kernel"}
CLI = "python -m harness run"


def module_file(name: str) -> Path | None:
    """The file a harness or records module is loaded from; None for a name that is no module (an attribute)."""
    path = REPO.joinpath(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def loaded_files(importtime: str) -> set[Path]:
    """The harness and records files a process loaded, read from its -X importtime report."""
    files = set()
    for line in importtime.splitlines():
        if line.startswith("import time:"):
            name = line.rsplit("|", 1)[-1].strip()
            if name.split(".")[0] in OWN_PACKAGES:
                found = module_file(name)
                assert found is not None, f"{name} was imported from outside the repository"
                files.add(found)
    return files


def run_time_nodes(node: ast.AST) -> list[ast.AST]:
    """Every node under `node` but those in `if TYPE_CHECKING:` blocks, which never run."""
    nodes = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
            continue
        nodes += [child, *run_time_nodes(child)]
    return nodes


def named_modules(name: str) -> set[str]:
    """The harness and records modules `name`'s source imports anywhere, inside its functions too."""
    path = module_file(name)
    assert path is not None
    names = set()
    for node in run_time_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {found for found in names if found.split(".")[0] in OWN_PACKAGES and module_file(found) is not None}


def reachable_modules(entry: str) -> set[str]:
    """`entry` and every harness or records module it can import, its functions' late imports included."""
    reached, pending = set(), [entry]
    while pending:
        name = pending.pop()
        if name not in reached:
            reached.add(name)
            pending.extend(named_modules(name))
    return reached


def run_cli(workload: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "harness", "run",
         "--definition", str(RMSNORM), "--workload", str(workload), "--solution", str(VECTORISED),
         "--warmup", "1", "--iterations", "1", "--timeout", "120"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def import_as_sandboxed(entry: str, scratch: Path) -> subprocess.CompletedProcess[str]:
    """Import `entry` and what it imports late, in the environment and from the Python the sandbox starts it with.

    The sandbox builds its processes' environment from nothing (harness.jail.sandbox.environment_for), so
    PYTHONPROFILEIMPORTTIME never reaches them and their stderr is a log the parent keeps only the tail of:
    a real evaluation cannot report what they load.
    """
    python = python_executable()
    workspace = Workspace(judge=scratch, kernel=scratch, sandboxed=False)
    imports = "; ".join(f"import {name}" for name in sorted(reachable_modules(entry)))
    return subprocess.run(
        [python, "-X", "importtime", "-c", imports],
        cwd=scratch, env=environment_for(SANDBOXED[entry], workspace, python),
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def loaded_by(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[Path]]:
    """The harness and records files each of the harness's processes loads in a real evaluation."""
    folder = tmp_path_factory.mktemp("digest")
    workload = folder / "workload.jsonl"
    workload.write_text((RMSNORM / "workload.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n")
    completed = run_cli(workload)
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert json.loads(completed.stdout)["status"] == "PASSED"
    loaded = {CLI: loaded_files(completed.stderr)}
    for entry in SANDBOXED:
        imported = import_as_sandboxed(entry, folder)
        assert imported.returncode == 0, imported.stderr[-4000:]
        loaded[entry] = loaded_files(imported.stderr)
    return loaded


@pytest.mark.parametrize("process", [CLI, *SANDBOXED])
def test_every_module_a_harness_process_loads_is_in_the_digest(loaded_by: dict[str, set[Path]], process: str) -> None:
    assert loaded_by[process], "the import report named no harness module"
    left_out = sorted(str(path.relative_to(REPO)) for path in loaded_by[process] - set(digested_files()))
    assert not left_out, f"{process} loads {left_out}, which RECORDS_MODULES leaves out"


def test_the_digest_covers_no_records_module_the_harness_does_not_load(loaded_by: dict[str, set[Path]]) -> None:
    records = REPO / "records"
    loaded = {path for files in loaded_by.values() for path in files if path.is_relative_to(records)}
    digested = {path for path in digested_files() if path.is_relative_to(records)}
    assert digested == loaded
