"""harness_digest covers every harness and records module the harness's processes load, and no records module
they do not: a result's digest names all the code that judged it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import harness
from harness import digested_files
from harness.jail.sandbox import Workspace, environment_for, python_executable
from tests.harness.imports import OWN_PACKAGES, REPO, module_file, reachable_modules

RMSNORM = REPO / "demo" / "definitions" / "rmsnorm_h2048"
VECTORISED = REPO / "demo" / "solutions" / "rmsnorm_h2048" / "rmsnorm-vectorised" / "solution.json"
# The processes the sandbox starts, by their entry module, and the role each is started as.
SANDBOXED = {"harness.judge.__main__": "judge", "harness.kernel.__main__": "kernel"}
CLI = "python -m harness run"


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


def left_out(loaded: set[Path]) -> list[str]:
    """The loaded files the digest does not cover, relative to the repository."""
    return sorted(str(path.relative_to(REPO)) for path in loaded - set(digested_files()))


@pytest.mark.parametrize("process", [CLI, *SANDBOXED])
def test_every_module_a_harness_process_loads_is_in_the_digest(loaded_by: dict[str, set[Path]], process: str) -> None:
    assert loaded_by[process], "the import report named no harness module"
    assert not left_out(loaded_by[process]), (
        f"{process} loads {left_out(loaded_by[process])}, which the digest leaves out"
    )


def test_every_subpackage_a_run_loads_is_in_the_digest(loaded_by: dict[str, set[Path]]) -> None:
    # The harness is laid out in subpackages by process (harness/README.md, "Layout"): each process loads its own.
    loaded = {path.parent.name for files in loaded_by.values() for path in files if path.name != "__init__.py"}
    assert {"parent", "jail", "judge", "kernel", "wire"} <= loaded
    assert not left_out({path for files in loaded_by.values() for path in files})


@pytest.mark.parametrize("entry", ["harness.__main__", *SANDBOXED])
def test_every_module_a_process_can_import_late_is_in_the_digest(entry: str) -> None:
    """What a process imports only on some paths (CUDA's timers, a returned output) judges too."""
    reachable = {module_file(name) for name in reachable_modules(entry)}
    assert not left_out({path for path in reachable if path is not None})


def test_a_loaded_records_module_left_out_of_the_digest_is_named(
    loaded_by: dict[str, set[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        harness, "RECORDS_MODULES", tuple(m for m in harness.RECORDS_MODULES if m != "records/hardware.py")
    )
    assert left_out(loaded_by[CLI]) == ["records/hardware.py"]


def test_the_digest_covers_no_records_module_the_harness_does_not_load(loaded_by: dict[str, set[Path]]) -> None:
    records = REPO / "records"
    loaded = {path for files in loaded_by.values() for path in files if path.is_relative_to(records)}
    digested = {path for path in digested_files() if path.is_relative_to(records)}
    assert digested == loaded
