"""Running the child: the bubblewrap command, and the parent's watch over time and memory.

The sandbox (bwrap) gives the child fresh namespaces (no network: only a
loopback of its own), the system, the Python installation and the harness code
read-only, the job read-only, and the scratch folder (HOME and TMPDIR) as the
only writable place; bwrap's minimal /dev keeps a private /dev/shm. The environment is built from nothing:
PATH, HOME, PYTHONPATH and a few CUDA and thread settings, never the caller's.
When the harness runs as root, bwrap sets the sandbox up as root and the child
drops to uid/gid 65534 before reading anything the solution controls.

Limits are kept by the parent. Wall time: past it, the process group is killed
(bwrap dies, and with it every process of the sandbox's PID namespace). Memory:
the resident memory of the whole process tree, read from /proc every tenth of a
second (RLIMIT_AS would break CUDA, which maps far more than it uses); the
child also caps its address space on the CPU so that one allocation far past
the limit fails at once instead of being caught after the fact.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SANDBOX_ROOT = Path("/opt/kernelindex")
JOB = Path("/job")
SCRATCH = Path("/scratch")
UNPRIVILEGED_ID = 65534
LOG_TAIL_BYTES = 4096
_POLL_SECONDS = 0.05
_MEMORY_EVERY_SECONDS = 0.1
_DRAIN_SECONDS = 2.0
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
_ETC = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
)
# Settings of the machine, not of the app, that a GPU build or run may need.
_PASSED_THROUGH = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "TORCH_CUDA_ARCH_LIST",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "MAX_JOBS",
)


class SandboxUnavailableError(RuntimeError):
    pass


@dataclass
class Workspace:
    """The host folders of one evaluation: the job (read-only to the child) and the empty scratch folder."""

    job: Path
    scratch: Path
    sandboxed: bool

    def child_job(self) -> Path:
        return JOB if self.sandboxed else self.job

    def child_scratch(self) -> Path:
        return SCRATCH if self.sandboxed else self.scratch


def bwrap_path() -> str:
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailableError(
            "bubblewrap (bwrap) is not installed, and solutions run only inside it: install it "
            "(apt-get install bubblewrap), or for development pass --unsandboxed "
            "(KERNELINDEX_HARNESS_UNSANDBOXED=1)"
        )
    return found


def child_command(workspace: Workspace, device: str, result_fd: int) -> tuple[list[str], dict[str, str]]:
    python = str(Path(os.path.realpath(sys.prefix)) / "bin" / "python")
    if not Path(python).exists():
        python = sys.executable
    child = [python, "-m", "harness.child", str(workspace.child_job()), str(workspace.child_scratch()), str(result_fd)]
    package_root = Path(__file__).resolve().parent.parent
    scratch = workspace.child_scratch()
    environment = {
        # The venv's tools (ninja for extension builds) and CUDA's (nvcc) come first.
        "PATH": os.pathsep.join([os.path.dirname(python), "/usr/local/cuda/bin", "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(SANDBOX_ROOT if workspace.sandboxed else package_root),
        "PYTHONDONTWRITEBYTECODE": "1",
        "TRITON_CACHE_DIR": str(scratch / ".triton"),
        "TORCH_EXTENSIONS_DIR": str(scratch / "torch_extensions"),
    }
    environment.update({name: os.environ[name] for name in _PASSED_THROUGH if name in os.environ})
    if not workspace.sandboxed:
        return child, environment
    return [bwrap_path(), *_bwrap_arguments(workspace, device, python), "--", *child], environment


def _bwrap_arguments(workspace: Workspace, device: str, python: str) -> list[str]:
    if os.geteuid() == 0:
        # Set up as root without a user namespace, so the child can become a real unprivileged user.
        arguments = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        arguments += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        arguments = ["--unshare-all"]
    arguments += ["--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev"]
    # /tmp stays read-only (TMPDIR is the scratch folder): no second writable place.
    arguments += ["--perms", "0755", "--dir", "/tmp"]
    for path in _SYSTEM:
        if os.path.islink(path):
            arguments += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            arguments += ["--ro-bind", path, path]
    for path in _ETC:
        arguments += ["--ro-bind-try", path, path]
    # The Python installation and the venv, wherever they are (a venv under /root, a pyenv build), shortest first
    # so that one inside another is bound once.
    bound: list[str] = list(_SYSTEM)
    prefixes = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix), os.path.dirname(python)}
    for prefix in sorted(prefixes, key=len):
        if not any(prefix == done or prefix.startswith(done + "/") for done in bound):
            arguments += _read_only_with_parents(prefix, prefix)
            bound.append(prefix)
    arguments += _read_only_with_parents(str(Path(__file__).resolve().parent), str(SANDBOX_ROOT / "harness"))
    arguments += ["--ro-bind", str(workspace.job), str(JOB), "--bind", str(workspace.scratch), str(SCRATCH)]
    if device.startswith("cuda"):
        for node in sorted(Path("/dev").glob("nvidia*")):
            arguments += ["--dev-bind", str(node), str(node)]
        arguments += ["--ro-bind-try", "/sys", "/sys"]
    # The sandbox's own root (where bwrap made the mount points) is read-only too.
    return [*arguments, "--remount-ro", "/", "--chdir", str(SCRATCH)]


def _read_only_with_parents(source: str, destination: str) -> list[str]:
    # bwrap makes missing parents of a mount point mode 0700, which the unprivileged child could not traverse.
    parents = [str(parent) for parent in reversed(Path(destination).parents) if str(parent) != "/"]
    arguments = []
    for parent in parents:
        arguments += ["--perms", "0755", "--dir", parent]
    return [*arguments, "--ro-bind", source, destination]


@dataclass
class Outcome:
    """What the parent saw of the child."""

    environment: dict[str, Any] = field(default_factory=dict)
    fatal: tuple[str, str] | None = None
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)
    running: str | None = None
    done: bool = False
    # TIMEOUT or OUT_OF_MEMORY when the parent killed the child, with why.
    stopped: tuple[str, str] | None = None
    returncode: int | None = None
    log: bytearray = field(default_factory=bytearray)

    @property
    def log_tail(self) -> str:
        return bytes(self.log[-LOG_TAIL_BYTES:]).decode("utf-8", errors="replace")


def run_child(
    build_command: Callable[[int], tuple[list[str], dict[str, str]]], cwd: Path, timeout: float, memory_mb: int | None
) -> Outcome:
    """Run the child to its end or its limit, collecting its events as they come.

    `build_command` gets the number of the descriptor the child writes its events to.
    """
    results_read, results_write = os.pipe()
    log_read, log_write = os.pipe()
    outcome = Outcome()
    try:
        command, environment = build_command(results_write)
        process = subprocess.Popen(
            command,
            env=environment,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log_write,
            stderr=log_write,
            pass_fds=(results_write,),
            start_new_session=True,
        )
    except BaseException:
        os.close(results_read)
        os.close(log_read)
        raise
    finally:
        # Only the child holds the writing ends now: its end, however it comes, ends both pipes.
        os.close(results_write)
        os.close(log_write)
    _watch(process, results_read, log_read, outcome, timeout, memory_mb)
    return outcome


def _watch(
    process: subprocess.Popen[bytes],
    results: int,
    log: int,
    outcome: Outcome,
    timeout: float,
    memory_mb: int | None,
) -> None:
    selector = selectors.DefaultSelector()
    selector.register(results, selectors.EVENT_READ, "results")
    selector.register(log, selectors.EVENT_READ, "log")
    pending = bytearray()
    deadline = time.monotonic() + timeout
    next_memory_check = 0.0
    exited_at: float | None = None
    while selector.get_map():
        for key, _ in selector.select(_POLL_SECONDS):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                selector.unregister(key.fd)
                os.close(key.fd)
            elif key.data == "results":
                pending += chunk
                pending = _handle_lines(pending, outcome)
            else:
                outcome.log += chunk
                del outcome.log[: -64 * LOG_TAIL_BYTES]
        now = time.monotonic()
        if process.poll() is not None:
            # A grandchild left outside the sandbox may hold the pipes open: stop reading after a grace period.
            exited_at = exited_at or now
            if now - exited_at > _DRAIN_SECONDS:
                break
            continue
        if now > deadline:
            _stop(process, outcome, "TIMEOUT", f"the evaluation passed its wall-time limit of {timeout:g} s")
        elif memory_mb and now >= next_memory_check:
            next_memory_check = now + _MEMORY_EVERY_SECONDS
            resident = tree_resident_bytes(process.pid)
            if resident > memory_mb * 2**20:
                _stop(
                    process,
                    outcome,
                    "OUT_OF_MEMORY",
                    f"the solution's processes reached {resident / 2**20:.0f} MiB resident, "
                    f"over the limit of {memory_mb} MiB",
                )
    for key in list(selector.get_map().values()):
        os.close(key.fd)
    selector.close()
    outcome.returncode = process.wait()


def _handle_lines(pending: bytearray, outcome: Outcome) -> bytearray:
    *lines, rest = bytes(pending).split(b"\n")
    for line in lines:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        event = message.pop("event", None)
        if event == "environment" and not outcome.environment and not outcome.cases:
            outcome.environment = message
        elif event == "start":
            outcome.running = str(message.get("uuid"))
        elif event == "case":
            outcome.cases[str(message.get("uuid"))] = message
            outcome.running = None
        elif event == "fatal":
            outcome.fatal = (str(message.get("status")), str(message.get("reason")))
        elif event == "done":
            outcome.done = True
    return bytearray(rest)


def _stop(process: subprocess.Popen[bytes], outcome: Outcome, status: str, reason: str) -> None:
    if outcome.stopped is None:
        outcome.stopped = (status, reason)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def tree_resident_bytes(root: int) -> int:
    """Resident memory of a process and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    resident: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        # After the command name: state, ppid, ... and rss (in pages) is the 22nd.
        children.setdefault(int(fields[1]), []).append(pid)
        resident[pid] = int(fields[21]) * page
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += resident.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total
