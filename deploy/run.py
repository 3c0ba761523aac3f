"""Run KernelIndex for development on one machine: Django's runserver, the web tier's Celery worker with the
periodic sweep (-B), and a rerun worker for this machine's hardware class, as production runs them apart.

`make run` runs this after its setup. The rerun worker is `manage.py
local_worker`, which makes and registers this machine's own key on first start
(var/worker-local.key, never in the repository) and then becomes `python -m
harness.worker` with the broker and that key alone: no database, no settings.
The quorum for the top needs agreeing reruns by different keys, so as many
local workers start as it asks (VERIFICATION_QUORUM; the second with
var/worker-local-2.key).

Each starts in a process group of its own, so that it can be
stopped whole: runserver is two processes (its autoreloader and the server it
restarts), the web worker several (its pool, the beat), the rerun worker its
harness while a rerun runs. Ctrl-C (SIGINT to the terminal's group: make and
this script) or SIGTERM asks all to stop: SIGTERM to runserver's group, and to
each worker's main process alone (a pool process stopped under it is
replaced). Whatever is left after STOP_TIMEOUT seconds is killed, group and
all: Celery's warm shutdown takes five to ten seconds even when idle (its timer
thread sleeps on), and a worker in the middle of a rerun would finish it first
(the job is acknowledged late, and the sweep sends it again). The processes a
killed rerun's sandbox served are in sessions of their own, frozen between
requests, and are freed last. If one stops by itself, the others are stopped
too and this exits non-zero.

The server's address reaches both as HOST and PORT, from which the settings make
SITE_URL (permalinks and citations) unless SITE_URL is set.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

BASE_DIR = Path(__file__).resolve().parent.parent
# The project's packages (the settings, the harness's sandbox groups), imported where they are needed.
sys.path.insert(0, str(BASE_DIR))
# Well within the ten seconds a person waits after Ctrl-C before reaching for kill -9.
STOP_TIMEOUT = 5.0


def main() -> int:
    options = parse_arguments()
    stopping: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    # Before anything starts, so that a Ctrl-C during start-up still stops whatever has started.
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    # The sweep applies the verification policy, which keeps to one rerun at a time here: every 10 s (production's
    # default is 30), so that the next rerun follows the last within seconds, unless RERUN_SWEEP_SECONDS says.
    environment = {"RERUN_SWEEP_SECONDS": "10"} | os.environ | {"HOST": options.host, "PORT": str(options.port)}
    address = f"[{options.host}]:{options.port}" if ":" in options.host else f"{options.host}:{options.port}"
    # (command, whether SIGTERM goes to its whole group or to its main process alone)
    commands = [
        ([sys.executable, "-m", "celery", "-A", "kernelindex", "worker", "-B", "--loglevel=warning"], False),
        *(
            ([sys.executable, "manage.py", "local_worker", f"--slot={slot}", "--", "--loglevel=warning"], False)
            for slot in range(1, local_workers() + 1)
        ),
        ([sys.executable, "manage.py", "runserver", address], True),
    ]
    children: list[Child] = []
    try:
        for command, whole_group in commands:
            if stopping:
                break
            process = subprocess.Popen(command, cwd=BASE_DIR, env=environment, process_group=0)
            children.append(Child(process, whole_group))
        while not stopping and all(child.process.poll() is None for child in children):
            time.sleep(0.2)
    finally:
        stop_all(children)
        free_abandoned_sandboxes()
    return 0 if stopping else 1


def local_workers() -> int:
    """As many local rerun workers, each with a key of its own, as the quorum for the top asks agreeing reruns
    (VERIFICATION_QUORUM, 2 by default): a newcomer's #1 can reach "reproduced by 2 workers". The verification
    policy keeps to VERIFICATION_MAX_IN_FLIGHT reruns at once (1), so the second mostly waits."""
    from kernelindex import settings

    return settings.VERIFICATION_QUORUM


@dataclass(frozen=True)
class Child:
    process: subprocess.Popen[bytes]
    term_whole_group: bool

    @property
    def group(self) -> int:
        return self.process.pid  # process_group=0: the child leads a group of its own


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    return parser.parse_args()


def stop_all(children: list[Child]) -> None:
    """SIGTERM to each child, then SIGKILL to every group with a process left after STOP_TIMEOUT."""
    for child in children:
        if child.term_whole_group:
            signal_group(child.group, signal.SIGTERM)
        elif child.process.poll() is None:
            child.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline and any(group_alive(child) for child in children):
        time.sleep(0.1)
    for child in children:
        if group_alive(child):
            signal_group(child.group, signal.SIGKILL)
        child.process.wait()


def free_abandoned_sandboxes() -> None:
    """A rerun worker killed mid-rerun (its warm shutdown outlasted STOP_TIMEOUT) kills its harness with it, and
    the processes that harness served, frozen between requests, stay frozen: a frozen process's SIGKILL waits for
    a thaw. Nothing else would free them, and their memory, until the next evaluation on this machine."""
    from harness.jail.cgroups import remove_abandoned

    remove_abandoned()


def signal_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signum)


def group_alive(child: Child) -> bool:
    """Whether any process of the child's group still runs; the child itself is reaped here."""
    if child.process.poll() is None:
        return True
    try:
        os.killpg(child.group, 0)
    except ProcessLookupError:
        return False
    return _members_running(child.group)


def _members_running(group: int) -> bool:
    """Whether the group has a member that is not a zombie (one whose parent died and nobody reaped)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return not Path("/proc/self").exists()  # without /proc, whatever kill() still finds counts


if __name__ == "__main__":
    sys.exit(main())
