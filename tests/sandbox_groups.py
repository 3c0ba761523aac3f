"""The cgroups an evaluation's sandbox makes (harness/jail/cgroups.py), as tests look at them from outside: which
are frozen, and what is left in them after the evaluating process was killed."""

from __future__ import annotations

from pathlib import Path

from harness.jail import cgroups


def groups_of(evaluator: int) -> list[Path]:
    """The cgroups (either hierarchy) of the evaluating process `evaluator`."""
    return list(cgroups.CGROUP_ROOT.glob(f"*/{cgroups.PARENT_NAME}/evaluation-{evaluator}-*"))


def processes_in(folder: Path) -> set[int]:
    try:
        return {int(pid) for pid in (folder / "cgroup.procs").read_text().split()}
    except FileNotFoundError:
        return set()  # removed since it was listed


def is_frozen(folder: Path) -> bool:
    state, flag = folder / "freezer.state", folder / "cgroup.freeze"
    try:
        return (state.exists() and state.read_text().strip() == "FROZEN") or (
            flag.exists() and flag.read_text().strip() == "1"
        )
    except FileNotFoundError:
        return False


def frozen_groups_of(evaluator: int) -> list[Path]:
    """The groups of `evaluator` that hold frozen processes now."""
    return [folder for folder in groups_of(evaluator) if is_frozen(folder) and processes_in(folder)]
