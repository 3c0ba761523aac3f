"""Two sandboxes, the judge's and the kernel's, and the parent's watch over both.

Each process runs under bubblewrap: fresh PID, network, IPC and UTS
namespaces (no network: only a loopback of its own), the system, the Python
installation and the harness code read-only, its own job folder read-only,
and a size-limited tmpfs as its only writable place (`--scratch-mb`). The
environment is built from nothing. When the harness runs as root, bwrap sets
each sandbox up as root and the process drops to uid/gid 65534 before reading
anything a solution controls.

The two sandboxes share nothing but what the parent hands both: the exchange
(a sealed memfd) and a pipe each way. The kernel's sandbox holds only the
solution: not the job, the seeds, the reference, or the result pipe, which
only the judge holds. Being in separate PID namespaces, neither can signal the
other.

Limits on the kernel's process tree (harness/README.md lists what each needs):
- a cgroup (root, or a delegated v2 subtree): memory in every form against
  `--memory-mb` (resident, shared, tmpfs, memfd), a pids limit, and its exact
  CPU time, which the judge reads through a descriptor to check its clock;
- a CPU quota of as many CPUs as it has threads (`OMP_NUM_THREADS`, else all),
  so that its CPU time can exceed its wall time only that many times over:
  the judge's clock check rests on it. A quota, not pinning: a kernel pinned
  to one CPU of a busy host waits for that CPU while another is idle;
- a seccomp filter (harness.jail.seccomp): no memfd, no new namespaces, no mounts,
  no ptrace;
- rlimits: file size (the scratch size), and on the CPU an address-space cap
  so that one allocation far past the limit fails at once;
- wall time for the whole evaluation (`--timeout`): past it the parent kills
  both process groups, and bwrap's death ends each sandbox's PID namespace;
- without a cgroup, the parent's resident-memory watchdog and RLIMIT_NPROC.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.jail import cgroups
from harness.jail.seccomp import SeccompUnavailableError, kernel_filter
from harness.wire.timing_names import TIMERS, Timer

SANDBOX_ROOT = Path("/opt/kernelindex")
JOB = Path("/job")
SCRATCH = Path("/scratch")
LOG_TAIL_BYTES = 4096
# Threads and processes of the kernel's sandbox: far more than torch starts, far fewer than the host allows.
KERNEL_PIDS = 512
JUDGE_PIDS = 512
# The judge holds the reference's outputs and a few sets of inputs beside the kernel's limit.
JUDGE_MEMORY_FACTOR, JUDGE_MEMORY_EXTRA_MB = 2, 2048
# The exchanges may take at most this share of the memory the host has available: the judge's copies, the
# reference's outputs and the kernel's own work need the rest.
EXCHANGE_SHARE_OF_AVAILABLE = 0.5
# What the parent reads of the judge's events: lines and bytes in all.
MAX_EVENT_LINE = 4 * 2**20
MAX_EVENT_BYTES = 64 * 2**20
_POLL_SECONDS = 0.05
# How long a served process may take to start (bwrap's setup, then exec) before the judge goes without its
# serving thread's run-queue wait.
SERVED_START_SECONDS = 10.0
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
# The code both sandboxes import, read-only.
_PACKAGES = ("harness", "records")


class SandboxUnavailableError(RuntimeError):
    pass


@dataclass
class Workspace:
    """The host folders of one evaluation: the judge's job, the kernel's (the solution alone) and the
    reference's (the definition's reference, served as a solution is)."""

    judge: Path
    kernel: Path
    sandboxed: bool
    reference: Path | None = None

    def folder(self, role: str) -> Path:
        if role == "reference" and self.reference is not None:
            return self.reference
        return self.judge if role == "judge" else self.kernel

    def job_in_sandbox(self, role: str) -> Path:
        return JOB if self.sandboxed else self.folder(role)

    def scratch_in_sandbox(self, role: str) -> Path:
        return SCRATCH if self.sandboxed else self.judge.parent / f"scratch-{role}"


@dataclass(frozen=True)
class Limits:
    """What the jail holds an evaluation's processes to (harness.parent.api `jail_limits`, from its options)."""

    timeout: float
    memory_mb: int | None
    scratch_mb: int
    # The CPUs' worth of time the kernel's processes may use at once (its cgroup's CPU quota).
    cpus: int
    device: str


def bwrap_path() -> str:
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailableError(
            "bubblewrap (bwrap) is not installed, and solutions run only inside it: install it "
            "(apt-get install bubblewrap), or for development pass --unsandboxed "
            "(KERNELINDEX_HARNESS_UNSANDBOXED=1)"
        )
    return found


def allowed_cpus() -> int:
    """The kernel's CPU quota: as many CPUs as OMP_NUM_THREADS says (its threads), else all this process may use."""
    available = len(os.sched_getaffinity(0))
    wanted = os.environ.get("OMP_NUM_THREADS", "")
    return min(int(wanted), available) if wanted.isdigit() and int(wanted) > 0 else available


def python_executable() -> str:
    python = str(Path(os.path.realpath(sys.prefix)) / "bin" / "python")
    return python if Path(python).exists() else sys.executable


def environment_for(role: str, workspace: Workspace, python: str) -> dict[str, str]:
    scratch = workspace.scratch_in_sandbox(role)
    package_root = Path(__file__).resolve().parents[2]
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
        # OpenMP's workers sleep as soon as they are idle, so an honest kernel's CPU time ends with its call.
        "OMP_WAIT_POLICY": "PASSIVE",
        # The C library's allocator, fixed alike in both processes: by default it moves its threshold for
        # mapping large blocks with what a process did before, so that the same temporaries page-fault on
        # every call in one process and come from the heap in the other (a reference timed against itself
        # measured 0.55x). Blocks up to 32 MiB (its largest threshold) come from the heap, never given back.
        "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
        "MALLOC_TRIM_THRESHOLD_": str(2**40),
    }
    environment.update({name: os.environ[name] for name in _PASSED_THROUGH if name in os.environ})
    return environment


def bwrap_arguments(role: str, workspace: Workspace, limits: Limits, python: str, seccomp_fd: int | None) -> list[str]:
    if os.geteuid() == 0:
        # Set up as root without a user namespace, so the process can become a real unprivileged user.
        arguments = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        arguments += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        arguments = ["--unshare-all", "--disable-userns"]
    arguments += ["--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev"]
    scratch_bytes = str(limits.scratch_mb * 2**20)
    # The only writable places: a scratch tmpfs and a /dev/shm, each of the scratch size (and, under a cgroup,
    # charged to the sandbox's memory as well). /tmp stays read-only: TMPDIR is the scratch.
    arguments += ["--size", scratch_bytes, "--perms", "01777", "--tmpfs", str(SCRATCH)]
    arguments += ["--size", scratch_bytes, "--perms", "01777", "--tmpfs", "/dev/shm"]
    arguments += ["--perms", "0755", "--dir", "/tmp"]
    for path in _SYSTEM:
        if os.path.islink(path):
            arguments += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            arguments += ["--ro-bind", path, path]
    for path in _ETC:
        arguments += ["--ro-bind-try", path, path]
    # The Python installation and the venv, wherever they are, shortest first so that one inside another is bound once.
    bound: list[str] = list(_SYSTEM)
    prefixes = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix), os.path.dirname(python)}
    for prefix in sorted(prefixes, key=len):
        if not any(prefix == done or prefix.startswith(done + "/") for done in bound):
            arguments += _read_only_with_parents(prefix, prefix)
            bound.append(prefix)
    package_root = Path(__file__).resolve().parents[2]
    for package in _PACKAGES:
        arguments += _read_only_with_parents(str(package_root / package), str(SANDBOX_ROOT / package))
    arguments += ["--ro-bind", str(workspace.folder(role)), str(JOB)]
    if limits.device.startswith("cuda"):
        for node in sorted(Path("/dev").glob("nvidia*")):
            arguments += ["--dev-bind", str(node), str(node)]
        arguments += ["--ro-bind-try", "/sys", "/sys"]
    if seccomp_fd is not None:
        arguments += ["--seccomp", str(seccomp_fd)]
    # The sandbox's own root (where bwrap made the mount points) is read-only too.
    return [*arguments, "--remount-ro", "/", "--chdir", str(SCRATCH)]


def _read_only_with_parents(source: str, destination: str) -> list[str]:
    # bwrap makes missing parents of a mount point mode 0700, which the unprivileged process could not traverse.
    parents = [str(parent) for parent in reversed(Path(destination).parents) if str(parent) != "/"]
    arguments = []
    for parent in parents:
        arguments += ["--perms", "0755", "--dir", parent]
    return [*arguments, "--ro-bind", source, destination]


@dataclass
class Outcome:
    """What the parent saw of the evaluation."""

    environment: dict[str, Any] = field(default_factory=dict)
    fatal: tuple[str, str] | None = None
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)
    running: str | None = None
    done: bool = False
    # TIMEOUT or OUT_OF_MEMORY when the parent stopped the evaluation, with why.
    stopped: tuple[str, str] | None = None
    # A limit the kernel's processes reached (the cgroup's memory or pids), named for the running case.
    limit_hit: tuple[str, str] | None = None
    # The judge's own memory limit, reached: the host's limit, not the kernel's (a judge killed for it said only
    # "killed by signal 9").
    judge_limit_hit: str | None = None
    judge_returncode: int | None = None
    kernel_returncode: int | None = None
    log: bytearray = field(default_factory=bytearray)
    judge_log: bytearray = field(default_factory=bytearray)
    limits: dict[str, Any] = field(default_factory=dict)
    known_cases: frozenset[str] = frozenset()
    # The clock the kernel's process timed with, as it said.
    timer: Timer | None = None
    max_samples: int = 0
    event_bytes: int = 0

    @property
    def log_tail(self) -> str:
        return bytes(self.log[-LOG_TAIL_BYTES:]).decode("utf-8", errors="replace")

    @property
    def judge_log_tail(self) -> str:
        return bytes(self.judge_log[-LOG_TAIL_BYTES:]).decode("utf-8", errors="replace")


@dataclass
class _Process:
    role: str
    popen: subprocess.Popen[bytes]
    group: cgroups.Cgroup | None


# The two processes the judge serves requests to: the solution's, and the definition's reference's, each in a
# sandbox and a cgroup of its own, started and measured alike.
SERVED = ("kernel", "reference")


@dataclass
class _Held:
    """What the parent holds for one evaluation, let go of once whatever happens: the descriptors it opened (each
    closed when a child holds it instead, when the watch takes it, or at the end), the cgroups it made and the
    processes it started."""

    descriptors: dict[int, None] = field(default_factory=dict)
    groups: list[cgroups.Cgroup] = field(default_factory=list)
    processes: list[_Process] = field(default_factory=list)
    kernel_group: cgroups.Cgroup | None = None
    judge_group: cgroups.Cgroup | None = None

    def opened(self, descriptor: int) -> int:
        self.descriptors[descriptor] = None
        return descriptor

    def pipe(self) -> tuple[int, int]:
        read, write = os.pipe()
        return self.opened(read), self.opened(write)

    def group(self, group: cgroups.Cgroup | None) -> cgroups.Cgroup | None:
        if group is not None:
            self.groups.append(group)
        return group

    def handed_over(self, *descriptors: int) -> None:
        """Close the parent's copies of descriptors only the children hold now."""
        for descriptor in descriptors:
            del self.descriptors[descriptor]
            os.close(descriptor)

    def taken(self, *descriptors: int) -> None:
        """Descriptors another owner closes: the watch, which reads them to the end."""
        for descriptor in descriptors:
            del self.descriptors[descriptor]

    def let_go(self) -> None:
        """Stop every process and close every descriptor still held; the cgroups stay, to be read once more."""
        # A frozen process takes no signal until it is thawed: thaw first, or the kill waits for ever.
        for group in self.groups:
            group.thaw()
        for process in self.processes:
            _kill(process)
        for descriptor in self.descriptors:
            with contextlib.suppress(OSError):
                os.close(descriptor)
        self.descriptors.clear()


def run_evaluation(
    workspace: Workspace,
    job: dict[str, Any],
    limits: Limits,
    exchange_size: int,
    known_cases: list[str],
    max_samples: int,
) -> Outcome:
    """Start the kernel's sandbox, the reference's and the judge's, watch them to the end or a limit, and clean up."""
    outcome = Outcome(known_cases=frozenset(known_cases), max_samples=max_samples)
    if workspace.sandboxed:
        # First: what a killed evaluation left holds memory the check below would count as taken.
        cgroups.remove_abandoned()
    shortfall = exchange_shortfall(exchange_size)
    if shortfall is not None:
        outcome.fatal = ("HARNESS_ERROR", shortfall)
        return outcome
    held = _Held()
    try:
        _start_and_watch(held, workspace, limits, exchange_size, outcome)
    finally:
        held.let_go()
        _limits_reached(outcome, held.kernel_group, held.judge_group)
        for group in held.groups:
            group.remove()
    return outcome


def _start_and_watch(held: _Held, workspace: Workspace, limits: Limits, exchange_size: int, outcome: Outcome) -> None:
    """Start the two served processes, then the judge with its ends of their pipes, and watch all three."""
    python = python_executable()
    results_read, results_write = held.pipe()
    kernel_log_read, kernel_log_write = held.pipe()
    judge_log_read, judge_log_write = held.pipe()
    descriptors: dict[str, Any] = {"results": results_write}
    handed: list[int] = []
    seccomp: int | None = None
    for role in SERVED:
        # One program each: bwrap reads its descriptor to the end.
        seccomp = _seccomp_descriptor(limits) if workspace.sandboxed else None
        if seccomp is not None:
            held.opened(seccomp)
        group = held.group(cgroups.create(limits.memory_mb, KERNEL_PIDS, limits.cpus) if workspace.sandboxed else None)
        if role == "kernel":
            held.kernel_group = group
        log = kernel_log_write if role == "kernel" else judge_log_write
        process, judge_side, served_side = _serve(
            role, workspace, limits, python, group, exchange_size, held, log=log, seccomp=seccomp
        )
        held.processes.append(process)
        descriptors[role] = judge_side
        handed += served_side
    judge_memory = limits.memory_mb and limits.memory_mb * JUDGE_MEMORY_FACTOR + JUDGE_MEMORY_EXTRA_MB
    held.judge_group = held.group(cgroups.create(judge_memory, JUDGE_PIDS, None) if workspace.sandboxed else None)
    latency = all("run_delay" in descriptors[role] for role in SERVED)
    outcome.limits = _limits_record(limits, held.kernel_group, seccomp is not None, latency)
    judge_command = [
        python,
        "-m",
        "harness.judge",
        str(workspace.job_in_sandbox("judge")),
        str(workspace.scratch_in_sandbox("judge")),
        json.dumps(descriptors),
    ]
    keep = (results_write, *(value for role in SERVED for value in descriptors[role].values()))
    held.processes.append(
        _start("judge", judge_command, workspace, limits, python, held.judge_group, log=judge_log_write, keep=keep)
    )
    # Only the children hold the writing ends now: their end, however it comes, ends the pipes.
    held.handed_over(results_write, kernel_log_write, judge_log_write, *handed, *_pipe_ends(descriptors))
    held.taken(results_read, kernel_log_read, judge_log_read)
    _watch(held.processes, results_read, kernel_log_read, judge_log_read, outcome, limits, held.kernel_group)


def _limits_reached(outcome: Outcome, kernel_group: cgroups.Cgroup | None, judge_group: cgroups.Cgroup | None) -> None:
    """What the groups say of how the processes ended, read once they are stopped: a limit of the kernel's, or the
    judge's own memory limit."""
    if kernel_group is not None and outcome.limit_hit is None:
        outcome.limit_hit = _limit_hit(kernel_group)
    if judge_group is not None and judge_group.out_of_memory():
        outcome.judge_limit_hit = (
            f"the judge reached its own memory limit of {judge_group.memory_mb} MiB "
            f"({JUDGE_MEMORY_FACTOR} times the solution's and {JUDGE_MEMORY_EXTRA_MB} MiB more, "
            "for the reference's inputs and outputs beside the solution's)"
        )


def exchange_shortfall(exchange_size: int) -> str | None:
    """Why this host cannot hold the exchanges (one per served process), if it cannot. They are allocated before
    anything runs; past what the host has free, its out-of-memory killer would pick a process of its own choosing
    (the judge, or another service of the host's)."""
    needed = exchange_size * len(SERVED)
    available = available_memory_bytes()
    if available is None or needed <= available * EXCHANGE_SHARE_OF_AVAILABLE:
        return None
    return (
        f"this host cannot judge this definition: its largest case needs {needed / 2**30:.1f} GiB of memory "
        f"shared between the judge and the served processes, more than {EXCHANGE_SHARE_OF_AVAILABLE:.0%} of the "
        f"{available / 2**30:.1f} GiB it has available"
    )


def available_memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _pipe_ends(descriptors: dict[str, Any]) -> list[int]:
    """The judge's ends of the served processes' pipes, which the parent closes once the judge holds them."""
    return [descriptors[role][name] for role in SERVED for name in ("calls", "replies")]


def _serve(
    role: str,
    workspace: Workspace,
    limits: Limits,
    python: str,
    group: cgroups.Cgroup | None,
    exchange_size: int,
    held: _Held,
    *,
    log: int,
    seccomp: int | None,
) -> tuple[_Process, dict[str, int], list[int]]:
    """Start one served process (harness.kernel) with its exchange, its pipes, and its group's meter and freezer:
    (the process, the judge's descriptors for it, the served process's ends that the parent closes)."""
    exchange = held.opened(_sealed_memfd(exchange_size))
    calls_read, calls_write = held.pipe()
    replies_read, replies_write = held.pipe()
    command = [
        python,
        "-m",
        "harness.kernel",
        str(workspace.job_in_sandbox(role) / "config.json"),
        str(workspace.scratch_in_sandbox(role)),
        str(calls_read),
        str(replies_write),
        str(exchange),
    ]
    process = _start(
        role,
        command,
        workspace,
        limits,
        python,
        group,
        log=log,
        keep=(calls_read, replies_write, exchange),
        seccomp=seccomp,
    )
    judge_side = {"calls": calls_write, "replies": replies_read, "exchange": exchange}
    if group is not None:
        for name, descriptor in zip(
            ("cpu_meter", "freeze", "frozen"), (group.cpu_meter(), *group.freezer()), strict=True
        ):
            judge_side[name] = held.opened(descriptor)
        run_delay = serving_thread_schedstat(group, command)
        if run_delay is not None:
            judge_side["run_delay"] = held.opened(run_delay)
    return process, judge_side, [calls_read, replies_write]


def serving_thread_schedstat(group: cgroups.Cgroup, command: list[str]) -> int | None:
    """A descriptor of the scheduler's statistics of the thread that serves the judge's requests: the served
    process's main thread (harness.kernel `serve` answers on it), whose run-queue wait the judge takes off its wall
    clock (harness.judge.served `Block.latency_ns`). Found here, by the parent, in the group's processes as the one that
    runs `command` itself (bwrap's own processes carry it among their arguments), once it has started and before
    the judge is (so before any solution code is loaded): the judge, in a PID namespace of its own, cannot name
    it, and the kernel is never asked. None where the host keeps no such statistics (a kernel without
    CONFIG_SCHED_INFO) or the process did not start in time: the judge then measures CPU time alone."""
    wanted = "\0".join(command).encode() + b"\0"
    deadline = time.monotonic() + SERVED_START_SECONDS
    while time.monotonic() < deadline:
        for pid in group.processes():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                    if cmdline.read() != wanted:
                        continue
                return os.open(f"/proc/{pid}/task/{pid}/schedstat", os.O_RDONLY)
            except OSError:
                continue
        time.sleep(0.005)
    return None


def _sealed_memfd(size: int) -> int:
    descriptor = os.memfd_create("kernelindex-exchange", os.MFD_ALLOW_SEALING)
    os.ftruncate(descriptor, size)
    # Its pages are allocated here, so they are charged to the parent's memory, not to the first served process to
    # map them: the exchange is the harness's, and a case of 4 GiB (two slots of it) would otherwise leave a
    # kernel under an 8 GiB limit nothing of its own.
    os.posix_fallocate(descriptor, 0, size)
    # Neither side may shrink it (the other's mapping would fault) or grow it.
    fcntl.fcntl(descriptor, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return descriptor


def _seccomp_descriptor(limits: Limits) -> int | None:
    try:
        # CUDA's runtime may share memory through memfd; there the cgroup charges it.
        program = kernel_filter(allow_memfd=limits.device.startswith("cuda"))
    except SeccompUnavailableError:
        return None
    descriptor = os.memfd_create("kernelindex-seccomp")
    os.write(descriptor, program)
    os.lseek(descriptor, 0, os.SEEK_SET)
    return descriptor


def _limits_record(limits: Limits, group: cgroups.Cgroup | None, seccomp: bool, latency: bool) -> dict[str, Any]:
    return {
        "memory_mb": limits.memory_mb,
        "memory": "cgroup" if group and limits.memory_mb else "rss watchdog" if limits.memory_mb else "none",
        "pids": KERNEL_PIDS if group else None,
        "scratch_mb": limits.scratch_mb,
        "cpus": limits.cpus if group else None,
        "seccomp": seccomp,
        "clock_check": clock_check(limits.device, group is not None, latency),
    }


# What the judge measures each request of a served process by (harness.parent.results Limits.clock_check). On the
# CPU, a request's latency: the larger of the group's CPU time and the judge's wall clock less the serving thread's
# run-queue wait (`LATENCY_CHECK`); where the host keeps no run-queue statistics, its CPU time alone (sleeping and
# blocking then cost a kernel nothing, and the page names the figure CPU time).
LATENCY_CHECK = "latency (cgroup cpu time, or wall clock less run-queue wait; frozen between requests)"
CPU_TIME_CHECK = "cpu time (cgroup, frozen between requests)"
WALL_CLOCK_CHECK = "wall clock (cgroup frozen between requests)"
NO_CHECK = "none"


def clock_check(device: str, grouped: bool, latency: bool = False) -> str:
    if not grouped:
        return NO_CHECK
    if device.startswith("cuda"):
        return WALL_CLOCK_CHECK
    return LATENCY_CHECK if latency else CPU_TIME_CHECK


def _start(
    role: str,
    command: list[str],
    workspace: Workspace,
    limits: Limits,
    python: str,
    group: cgroups.Cgroup | None,
    *,
    log: int,
    keep: tuple[int, ...],
    seccomp: int | None = None,
) -> _Process:
    environment = environment_for(role, workspace, python)
    if workspace.sandboxed:
        command = [bwrap_path(), *bwrap_arguments(role, workspace, limits, python, seccomp), "--", *command]
    else:
        workspace.scratch_in_sandbox(role).mkdir(exist_ok=True)
    join = group.join_file_descriptors() if group else []
    nproc = None if group else _nproc_limit()
    file_size = limits.scratch_mb * 2**20 if role in SERVED else None

    def prepare() -> None:
        # In the new process, before bwrap: into the cgroup, under its rlimits.
        for descriptor in join:
            os.write(descriptor, b"0")
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
        if nproc is not None and role in SERVED:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    try:
        popen = subprocess.Popen(
            command,
            env=environment,
            cwd=workspace.judge.parent,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=tuple(d for d in (*keep, seccomp) if d is not None),
            start_new_session=True,
            preexec_fn=prepare,
        )
    finally:
        for descriptor in join:
            os.close(descriptor)
    return _Process(role, popen, group)


def _nproc_limit() -> int | None:
    """Without a cgroup: this user's tasks now plus the sandbox's allowance (RLIMIT_NPROC counts per user)."""
    if os.geteuid() == 0:
        return None  # root is not held by RLIMIT_NPROC, and drops to 65534 only inside the sandbox
    uid = os.geteuid()
    tasks = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    tasks += len(os.listdir(f"/proc/{entry.name}/task"))
    return tasks + KERNEL_PIDS


def _watch(
    processes: list[_Process],
    results: int,
    kernel_log: int,
    judge_log: int,
    outcome: Outcome,
    limits: Limits,
    kernel_group: cgroups.Cgroup | None,
) -> None:
    kernel, judge = processes[0], processes[-1]
    selector = selectors.DefaultSelector()
    selector.register(results, selectors.EVENT_READ, "results")
    selector.register(kernel_log, selectors.EVENT_READ, "log")
    selector.register(judge_log, selectors.EVENT_READ, "judge_log")
    pending = bytearray()
    deadline = time.monotonic() + limits.timeout
    next_memory_check = 0.0
    exited_at: float | None = None
    try:
        while selector.get_map():
            for key, _ in selector.select(_POLL_SECONDS):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fd)
                    os.close(key.fd)
                elif key.data == "results":
                    pending = _take_events(pending + chunk, outcome)
                    if outcome.stopped is not None:
                        _kill(judge)
                        _kill(kernel)
                elif key.data == "log":
                    outcome.log += chunk
                    del outcome.log[: -64 * LOG_TAIL_BYTES]
                else:
                    outcome.judge_log += chunk
                    del outcome.judge_log[: -64 * LOG_TAIL_BYTES]
            now = time.monotonic()
            if judge.popen.poll() is not None:
                # A process left outside the sandbox may hold the pipes open: stop reading after a grace period.
                exited_at = exited_at or now
                if now - exited_at > _DRAIN_SECONDS:
                    break
                continue
            if now > deadline:
                _stop(
                    processes, outcome, "TIMEOUT", f"the evaluation passed its wall-time limit of {limits.timeout:g} s"
                )
            elif limits.memory_mb and kernel_group is None and now >= next_memory_check:
                next_memory_check = now + _MEMORY_EVERY_SECONDS
                resident = tree_resident_bytes(kernel.popen.pid)
                if resident > limits.memory_mb * 2**20:
                    _stop(
                        processes,
                        outcome,
                        "OUT_OF_MEMORY",
                        f"the solution's processes reached {resident / 2**20:.0f} MiB resident, "
                        f"over the limit of {limits.memory_mb} MiB",
                    )
    finally:
        for key in list(selector.get_map().values()):
            os.close(key.fd)
        selector.close()
        if kernel_group is not None and judge.popen.poll() is not None:
            # A judge that ended without telling the kernel's process to exit (killed, or stopped) may have left it
            # frozen, and a frozen process takes no signal until it is thawed.
            with contextlib.suppress(OSError):
                kernel_group.thaw()
        with contextlib.suppress(subprocess.TimeoutExpired):
            # Normally gone already (it was told to exit, or it died and the judge saw its pipe close).
            outcome.kernel_returncode = kernel.popen.wait(timeout=1)
        _kill(kernel)
        outcome.judge_returncode = judge.popen.wait()


def _take_events(pending: bytearray, outcome: Outcome) -> bytearray:
    """Read whole lines of the judge's events, within bounds; what breaks them stops the evaluation."""
    outcome.event_bytes += len(pending)
    *lines, rest = bytes(pending).split(b"\n")
    if len(rest) > MAX_EVENT_LINE or outcome.event_bytes > MAX_EVENT_BYTES:
        outcome.stopped = ("HARNESS_ERROR", "the judge sent more than its result channel allows")
        return bytearray()
    for line in lines:
        try:
            message = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(message, dict):
            _take_event(message, outcome)
    return bytearray(rest)


def _take_event(message: dict[str, Any], outcome: Outcome) -> None:
    event = message.pop("event", None)
    uuid = str(message.get("uuid"))
    if event == "environment" and not outcome.environment and not outcome.cases:
        outcome.environment = message
    elif event == "start" and uuid in outcome.known_cases:
        outcome.running = uuid
    elif event == "case" and uuid in outcome.known_cases and uuid not in outcome.cases:
        for key in ("samples", "reference_samples", "pair_ratios", "pair_ratio_bounds"):
            samples = message.get(key)
            if isinstance(samples, list) and len(samples) > outcome.max_samples:
                message[key] = None
                message["status"], message["reason"] = "HARNESS_ERROR", f"more {key} than the harness takes"
        outcome.cases[uuid] = message
        outcome.running = None
    elif event == "fatal" and outcome.fatal is None:
        outcome.fatal = (str(message.get("status")), str(message.get("reason")))
    elif event == "timer":
        outcome.timer = next((timer for timer in TIMERS if timer == message.get("name")), None)
    elif event == "done":
        outcome.done = True


def _limit_hit(group: cgroups.Cgroup) -> tuple[str, str] | None:
    if group.out_of_memory():
        return ("OUT_OF_MEMORY", f"the solution's processes reached the memory limit of {group.memory_mb} MiB")
    if group.pids_exhausted():
        return ("RUNTIME_ERROR", f"the solution reached the limit of {group.pids} processes and threads")
    return None


def _stop(processes: list[_Process], outcome: Outcome, status: str, reason: str) -> None:
    if outcome.stopped is None:
        outcome.stopped = (status, reason)
    for process in processes:
        _kill(process)


def _kill(process: _Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.popen.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.popen.wait(timeout=5)


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
