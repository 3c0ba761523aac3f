"""A control group per sandboxed process tree: memory in every form, processes, and exact CPU time.

The kernel charges a cgroup for everything its processes hold: resident
memory, shared memory and tmpfs pages, memfd files. So a cgroup's memory limit
is the one limit a solution cannot step around, its pids limit bounds process
and thread bombs, its CPU quota bounds how many CPUs' time it uses at once,
and its CPU counter is exact, in nanoseconds, for every thread that ever ran
in it (exited ones too). Quota and counter together are what the judge holds
a kernel's own timings against.

Both layouts are supported: cgroup v1 (one hierarchy per controller, as on
this project's hosts) and v2 (one unified hierarchy). Creating groups needs
root, or a v2 subtree delegated to the worker's user; without either,
`create` returns None and the harness falls back to its resident-memory
watchdog, rlimits and a size-limited tmpfs (harness/README.md says what is
then not enforced).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PARENT_NAME = "kernelindex-harness"
_V1_CONTROLLERS = ("memory", "pids", "cpuacct", "cpu", "freezer")
# How long freezing a group may take before the judge gives up on it (a task stuck in the kernel).
FREEZE_TIMEOUT_SECONDS = 5.0
# A group older than this with no process left is an evaluation's whose parent was killed.
ABANDONED_AFTER_SECONDS = 3600
# The quota's period: a burst above the quota lasts at most this long. Shorter periods (1 ms, under the
# scheduler's 5 ms bandwidth slice) throttled an honest single-threaded matmul to half its speed.
CPU_PERIOD_US = 10_000


@dataclass
class Cgroup:
    """One group (a folder per v1 controller, or one v2 folder) with its limits set."""

    folders: dict[str, Path]
    version: int
    memory_mb: int | None
    pids: int
    cpus: int | None = None

    def join_file_descriptors(self) -> list[int]:
        """Open `cgroup.procs` of each folder; a child writes its pid to them before it execs."""
        return [os.open(folder / "cgroup.procs", os.O_WRONLY) for folder in dict.fromkeys(self.folders.values())]

    def cpu_meter(self) -> int:
        """A descriptor the judge reads the group's CPU time from (see `read_cpu_ns`)."""
        if self.version == 1:
            return os.open(self.folders["cpuacct"] / "cpuacct.usage", os.O_RDONLY)
        return os.open(self.folders["cpu"] / "cpu.stat", os.O_RDONLY)

    def freezer(self) -> tuple[int, int]:
        """Descriptors (write, read) the judge freezes and thaws the group with (see `Freezer`): opened here, by
        the parent, since the unprivileged judge may not open cgroup files itself."""
        if self.version == 1:
            state = self.folders["freezer"] / "freezer.state"
            return os.open(state, os.O_WRONLY), os.open(state, os.O_RDONLY)
        folder = self.folders["cpu"]
        return os.open(folder / "cgroup.freeze", os.O_WRONLY), os.open(folder / "cgroup.events", os.O_RDONLY)

    def processes(self) -> list[int]:
        """The processes in the group now (their thread-group ids)."""
        return _pids(self.folders["pids"])

    def out_of_memory(self) -> bool:
        if self.version == 1:
            return _counter(self.folders["memory"] / "memory.oom_control", "oom_kill") > 0
        return _counter(self.folders["memory"] / "memory.events", "oom_kill") > 0

    def pids_exhausted(self) -> bool:
        return _counter(self.folders["pids"] / "pids.events", "max") > 0

    def thaw(self) -> None:
        """Let a frozen group run again: a frozen task takes no signal, SIGKILL included, until it is thawed."""
        _thaw_folder(self.folders["freezer"] if self.version == 1 else self.folders["cpu"])

    def remove(self) -> None:
        """Kill what is left in the group (thawed first), then remove it."""
        self.thaw()
        for folder in dict.fromkeys(self.folders.values()):
            _kill_and_remove(folder)


def read_cpu_ns(meter: int) -> int:
    """The group's CPU time so far, in nanoseconds, from a descriptor `cpu_meter` opened."""
    text = os.pread(meter, 4096, 0).decode("ascii", errors="replace")
    if text.startswith("usage_usec"):
        return _value(text, "usage_usec") * 1000
    return int(text.split()[0])


class FreezeError(RuntimeError):
    """The group did not freeze in time: its CPU counter cannot be read as settled."""


@dataclass
class Freezer:
    """Freezes and thaws one group through the descriptors `Cgroup.freezer` opened.

    A frozen group's tasks are off every CPU and stay so: its CPU counter is settled, and whatever the
    group's code would do (a thread left spinning, work deferred to a later moment) waits until it is
    thawed for its next measured request.
    """

    write_fd: int
    read_fd: int

    def freeze(self) -> None:
        self._write(b"FROZEN", b"1")
        deadline = time.monotonic() + FREEZE_TIMEOUT_SECONDS
        while not self.frozen():
            if time.monotonic() > deadline:
                raise FreezeError(f"the group did not freeze within {FREEZE_TIMEOUT_SECONDS:g} s")
            time.sleep(0.0001)

    def thaw(self) -> None:
        self._write(b"THAWED", b"0")

    def frozen(self) -> bool:
        text = os.pread(self.read_fd, 4096, 0).decode("ascii", errors="replace")
        if text.startswith(("FROZEN", "FREEZING", "THAWED")):
            return text.startswith("FROZEN")
        return _value(text, "frozen") == 1

    def _write(self, v1: bytes, v2: bytes) -> None:
        # The read side tells the layouts apart: v1's freezer.state names a state, v2's cgroup.events has lines.
        first = os.pread(self.read_fd, 16, 0)
        os.write(self.write_fd, v1 if first[:1].isupper() else v2)


def create(memory_mb: int | None, pids: int, cpus: int | None) -> Cgroup | None:
    """A new group with these limits (`cpus`: a CPU quota, that many CPUs' time), or None where this process
    may not make one."""
    # The evaluating process's pid in the name: a group whose evaluator is gone is reaped by the next one
    # (`remove_abandoned`).
    name = f"evaluation-{os.getpid()}-{uuid.uuid4().hex[:12]}"
    try:
        if (CGROUP_ROOT / "cgroup.controllers").exists():
            return _create_v2(name, memory_mb, pids, cpus)
        return _create_v1(name, memory_mb, pids, cpus)
    except OSError:
        return None


def _create_v1(name: str, memory_mb: int | None, pids: int, cpus: int | None) -> Cgroup | None:
    if not all((CGROUP_ROOT / controller / "cgroup.procs").exists() for controller in _V1_CONTROLLERS):
        return None
    folders = {}
    for controller in _V1_CONTROLLERS:
        folder = CGROUP_ROOT / controller / PARENT_NAME / name
        # Hierarchies may be mounted together (cpu,cpuacct): one folder then serves both.
        folder.mkdir(parents=True, exist_ok=True)
        folders[controller] = folder.resolve()
    group = Cgroup(folders=folders, version=1, memory_mb=memory_mb, pids=pids, cpus=cpus)
    try:
        if cpus:
            (folders["cpu"] / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (folders["cpu"] / "cpu.cfs_quota_us").write_text(str(cpus * CPU_PERIOD_US))
        if memory_mb:
            limit = str(memory_mb * 2**20)
            (folders["memory"] / "memory.limit_in_bytes").write_text(limit)
            swap = folders["memory"] / "memory.memsw.limit_in_bytes"
            if swap.exists():
                # Memory and swap together: no escape into swap.
                swap.write_text(limit)
        (folders["pids"] / "pids.max").write_text(str(pids))
    except OSError:
        group.remove()
        raise
    return group


def _create_v2(name: str, memory_mb: int | None, pids: int, cpus: int | None) -> Cgroup | None:
    parent = CGROUP_ROOT / PARENT_NAME
    if not parent.exists():
        parent.mkdir()
    # Controllers must be enabled on each level above the group.
    for level in (CGROUP_ROOT, parent):
        enabled = (level / "cgroup.subtree_control").read_text().split()
        wanted = [f"+{c}" for c in ("memory", "pids", "cpu") if c not in enabled]
        if wanted:
            (level / "cgroup.subtree_control").write_text(" ".join(wanted))
    folder = parent / name
    folder.mkdir()
    group = Cgroup(
        folders={"memory": folder, "pids": folder, "cpu": folder}, version=2, memory_mb=memory_mb, pids=pids, cpus=cpus
    )
    try:
        if cpus:
            (folder / "cpu.max").write_text(f"{cpus * CPU_PERIOD_US} {CPU_PERIOD_US}")
        if memory_mb:
            (folder / "memory.max").write_text(str(memory_mb * 2**20))
            with contextlib.suppress(FileNotFoundError):
                (folder / "memory.swap.max").write_text("0")
        (folder / "pids.max").write_text(str(pids))
    except OSError:
        group.remove()
        raise
    return group


def remove_abandoned() -> None:
    """Groups an evaluation left when its evaluating process was killed. Their processes are frozen between
    requests, and a frozen process does not die with its parent (its SIGKILL waits for a thaw): it keeps its
    memory, the exchange it maps included, until it is thawed and emptied here. A group whose evaluator is
    gone, or of no known evaluator and older than ABANDONED_AFTER_SECONDS."""
    cutoff = time.time() - ABANDONED_AFTER_SECONDS
    abandoned: list[Path] = []
    for parent in CGROUP_ROOT.glob(f"*/{PARENT_NAME}"):
        with contextlib.suppress(OSError):
            abandoned += [folder for folder in parent.iterdir() if folder.is_dir() and _abandoned(folder, cutoff)]
    # Every group thawed before any is emptied: under v1 a group's freezer is a folder of its own, and its tasks,
    # killed while frozen, would hold the folders of the other hierarchies until then.
    for folder in abandoned:
        _thaw_folder(folder)
    for folder in abandoned:
        _kill_and_remove(folder)


def _abandoned(folder: Path, cutoff: float) -> bool:
    match = re.fullmatch(r"evaluation-(\d+)-[0-9a-f]+", folder.name)
    if match is None:
        # Old ones only: a new group may not have its processes yet.
        return folder.stat().st_mtime < cutoff
    return not _running(int(match.group(1)))


def _running(pid: int) -> bool:
    """Whether the process runs: a killed evaluator is a zombie until its parent, or init, reaps it, and one whose
    parent was killed with it (a rerun worker's, at Ctrl-C in `make run`) is one for a while."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] not in ("Z", "X")


def _kill_and_remove(folder: Path) -> None:
    """Kill every task in a (thawed) group and remove it, trying for about a second while tasks exit."""
    for _ in range(50):
        for pid in _pids(folder):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, 9)
        with contextlib.suppress(OSError):
            folder.rmdir()
            return
        time.sleep(0.02)


def _thaw_folder(folder: Path) -> None:
    """Thaw a group through whichever file its hierarchy has (v1's freezer.state, v2's cgroup.freeze)."""
    with contextlib.suppress(OSError):
        if (folder / "freezer.state").exists():
            (folder / "freezer.state").write_text("THAWED")
        elif (folder / "cgroup.freeze").exists():
            (folder / "cgroup.freeze").write_text("0")


def _pids(folder: Path) -> list[int]:
    try:
        return [int(line) for line in (folder / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _counter(path: Path, key: str) -> int:
    try:
        return _value(path.read_text(), key)
    except OSError:
        return 0


def _value(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0
