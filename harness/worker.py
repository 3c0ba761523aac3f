"""A rerun worker that holds no database: `python -m harness.worker`.

It needs three things: the broker's URL, its hardware class, and its signing
key (the file `manage.py worker_key create NAME --class CLASS` printed):

    python -m harness.worker --broker rediss://queue.example:6379/0 --class nvidia-h100 --key worker.key

(or KERNELINDEX_BROKER_URL, KERNELINDEX_HARDWARE_CLASS, KERNELINDEX_WORKER_KEY_FILE). It consumes its
class's queue (`reruns.<class>`). A job carries everything the harness needs (the run's definition with
its reference and cases, the solution, the protocol, the limits) and a job id; the worker runs
`python -m harness run` in a subprocess with a clean environment, as runs/reruns.py did when a worker
was a Django process, and sends the site a signed attestation (records.attestation) on the results
queue. Every message it sends (it took a job, it is alive, it stops) is signed with the same key; it
reads nothing back. It imports no Django: only harness/, records/, celery and kombu.
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from records.attestation import (
    MESSAGE_PAYLOAD_TYPE,
    STATEMENT_PAYLOAD_TYPE,
    load_private_key,
    rerun_statement,
    sign_envelope,
)
from records.canonical import canonical_text, parse_json
from records.sources.hardware import hardware_class_named, queue_of

logger = logging.getLogger("harness.worker")

# The names both sides of the queue agree on: the job the site sends, the task the site's collector runs.
JOB_TASK = "kernelindex.rerun_job"
COLLECT_TASK = "runs.tasks.collect_worker_message"
RESULTS_QUEUE = "kernelindex.results"
LOG_TAIL_CHARS = 4000
ROOT = Path(__file__).resolve().parent.parent
# What a harness process may see of the worker's environment: nothing of its key or its broker.
# The thread counts are the machine's timing setup (see harness_environment).
HARNESS_ENVIRONMENT = (
    "PATH",
    "LANG",
    "LC_ALL",
    "HOME",
    "TMPDIR",
    "CUDA_VISIBLE_DEVICES",
    "KERNELINDEX_HARDWARE_CLASS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
)
KEY_NAME_LINE = "# KernelIndex rerun worker: "
KEY_CLASSES_LINE = "# classes: "


def harness_environment(hardware: str) -> dict[str, str]:
    """The part of the worker's environment a harness process gets (HARNESS_ENVIRONMENT).

    On the CPU, kernels are timed on one thread unless the worker says otherwise: an operation that runs
    in parallel waits for every core it uses, and on a machine doing other work a rerun measured up to a
    hundred times the figure a quiet machine gives. The demo's reported figures were measured so.
    """
    environment = {name: os.environ[name] for name in HARNESS_ENVIRONMENT if name in os.environ}
    if hardware_class_named(hardware).device == "cpu":
        environment.setdefault("OMP_NUM_THREADS", "1")
    return environment


# -- the key file ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerKey:
    """Who the worker is: its registered name, and the key it signs with."""

    name: str
    key: Ed25519PrivateKey


def key_file_text(name: str, classes: list[str], pem: str) -> str:
    return f"{KEY_NAME_LINE}{name}\n{KEY_CLASSES_LINE}{','.join(classes)}\n{pem}"


def read_key_file(path: Path) -> WorkerKey:
    text = path.read_text()
    names = [line.removeprefix(KEY_NAME_LINE).strip() for line in text.splitlines() if line.startswith(KEY_NAME_LINE)]
    if not names:
        raise SystemExit(f"{path}: not a KernelIndex worker key (no line {KEY_NAME_LINE.strip()!r})")
    pem = text[text.index("-----BEGIN") :]
    return WorkerKey(names[0], load_private_key(pem))


# -- one job ---------------------------------------------------------------------------------------


def now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class HarnessOutcome:
    """What one harness process left: its JSON result (None if it produced none), its log's tail, its time."""

    result: dict[str, Any] | None
    log_tail: str
    seconds: float


def write_job_files(job: Mapping[str, Any], folder: Path) -> None:
    # json.dumps order, not the canonical form: the order of inputs and outputs is the order of the arguments.
    import json

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "definition.json").write_text(json.dumps(job["definition"]))
    (folder / "workload.jsonl").write_text("".join(canonical_text(case) + "\n" for case in job["cases"]))
    (folder / "solution.json").write_text(canonical_text(job["solution"]))


def harness_command(job: Mapping[str, Any], folder: Path, *, fresh_inputs: bool, unsandboxed: bool) -> list[str]:
    """`python -m harness run` on the job's files, under the job's protocol and limits."""
    limits = job.get("limits") or {}
    command = [sys.executable, "-m", "harness", "run"]
    command += ["--definition", str(folder / "definition.json"), "--workload", str(folder / "workload.jsonl")]
    command += ["--solution", str(folder / "solution.json"), "--json", str(folder / "result.json")]
    command += ["--device", hardware_class_named(str(job["hardwareClass"])).device]
    command += ["--protocol", str(job["protocol"])]
    command += ["--timeout", str(int(limits.get("timeoutSeconds", 600)))]
    command += ["--memory-mb", str(int(limits.get("memoryMb", 4096)))]
    if fresh_inputs:
        command.append("--fresh-inputs")
    if unsandboxed:
        command.append("--unsandboxed")
    return command


def _die_with_parent() -> None:
    """In the harness process: die with the worker, so a killed worker leaves no evaluation running."""
    PR_SET_PDEATHSIG = 1  # noqa: N806 (the kernel's name)
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def run_harness(job: Mapping[str, Any], folder: Path, *, fresh_inputs: bool, unsandboxed: bool) -> HarnessOutcome:
    write_job_files(job, folder)
    command = harness_command(job, folder, fresh_inputs=fresh_inputs, unsandboxed=unsandboxed)
    # The limit the harness enforces itself, and a margin for its start and its own clean-up.
    deadline = int((job.get("limits") or {}).get("timeoutSeconds", 600)) + 120
    log_path = folder / "harness.log"
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=harness_environment(str(job["hardwareClass"])),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
        try:
            process.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    seconds = time.monotonic() - started
    log_tail = log_path.read_bytes()[-LOG_TAIL_CHARS:].decode(errors="replace")
    output = folder / "result.json"
    result = None
    if process.returncode == 0 and output.is_file():
        try:
            result = parse_json(output.read_bytes())
        except ValueError:
            result = None
    return HarnessOutcome(result if isinstance(result, dict) else None, log_tail, seconds)


# The statuses whose failure counts only once a second evaluation on fresh inputs confirms it
# (records.rerun.CORRECTNESS_FAILURES).
CONFIRMED_FAILURES = frozenset({"INCORRECT_SHAPE", "INCORRECT_NUMERICAL", "INCORRECT_DTYPE"})


def confirm_failure(
    job: Mapping[str, Any], first: HarnessOutcome, folder: Path, *, unsandboxed: bool
) -> dict[str, Any] | None:
    """The confirmation step of evidence rule 4, in this one place, to be deleted with it (issue 22).

    A correctness failure counts only once a second evaluation on fresh inputs confirms it; the attestation
    carries the second status beside the first.
    """
    if first.result is None or first.result.get("status") not in CONFIRMED_FAILURES:
        return None
    second = run_harness(job, folder / "fresh", fresh_inputs=True, unsandboxed=unsandboxed)
    return {"status": str(second.result.get("status")) if second.result else "HARNESS_ERROR"}


def attest_job(
    job: Mapping[str, Any], worker: WorkerKey, instance: str, *, unsandboxed: bool = False
) -> dict[str, Any]:
    """Run the job's harness (and its confirmation, where one is due); the signed attestation of what it gave."""
    started_at = now_text()
    with tempfile.TemporaryDirectory(prefix=f"rerun-{job['request']}-") as folder:
        outcome = run_harness(job, Path(folder), fresh_inputs=False, unsandboxed=unsandboxed)
        confirmation = confirm_failure(job, outcome, Path(folder), unsandboxed=unsandboxed)
    result = outcome.result
    predicate: dict[str, Any] = {
        "jobId": job["jobId"],
        "request": job["request"],
        "run": job["run"],
        "worker": worker.name,
        "instance": instance,
        "hardwareClass": job["hardwareClass"],
        "harness": (result or {}).get("harness"),
        "protocol": (result or {}).get("protocol") or {"name": job["protocol"]},
        "environment": (result or {}).get("environment"),
        "result": result,
        "startedAt": started_at,
        "finishedAt": now_text(),
        "harnessSeconds": round(outcome.seconds, 3),
        "logTail": outcome.log_tail,
    }
    if confirmation is not None:
        predicate["confirmation"] = confirmation
    if result is None:
        predicate["error"] = "HARNESS_ERROR: the harness produced no result"
    statement = rerun_statement(run_digest=str(job["runDigest"]), result=result, predicate=predicate)
    return sign_envelope(STATEMENT_PAYLOAD_TYPE, statement, worker.key)


def message(worker: WorkerKey, kind: str, **fields: Any) -> dict[str, Any]:
    """A signed message of the worker's own: started (a job), beat (alive, on a job or none), stopped."""
    body = {"type": kind, "worker": worker.name, "at": now_text(), **fields}
    return sign_envelope(MESSAGE_PAYLOAD_TYPE, body, worker.key)


# -- the Celery worker --------------------------------------------------------------------------------


@dataclass
class WorkerState:
    worker: WorkerKey
    hardware: str
    instance: str
    unsandboxed: bool
    heartbeat_seconds: float
    send: Callable[[dict[str, Any]], bool]
    job: str | None = None
    stopped: threading.Event = field(default_factory=threading.Event)

    def beat(self) -> None:
        self.send(message(self.worker, "beat", instance=self.instance, classes=[self.hardware], job=self.job))

    def beat_until_stopped(self) -> None:
        while not self.stopped.is_set():
            self.beat()
            self.stopped.wait(self.heartbeat_seconds)

    def run(self, job: Mapping[str, Any]) -> None:
        if job.get("hardwareClass") != self.hardware:
            logger.error(
                "job %s is for class %s, not %s: dropped", job.get("jobId"), job.get("hardwareClass"), self.hardware
            )
            return
        self.job = str(job["jobId"])
        try:
            self.send(message(self.worker, "started", instance=self.instance, job=self.job, classes=[self.hardware]))
            envelope = attest_job(job, self.worker, self.instance, unsandboxed=self.unsandboxed)
            # The result must reach the site: with the broker down, it waits here (the site's sweep takes a
            # job back only when the beats stop, and they go on meanwhile).
            while not self.send(envelope):
                time.sleep(min(self.heartbeat_seconds, 5))
        finally:
            self.job = None


def sender(app: Any) -> Callable[[dict[str, Any]], bool]:
    def send(envelope: dict[str, Any]) -> bool:
        try:
            app.send_task(COLLECT_TASK, args=(envelope,), queue=RESULTS_QUEUE, retry=False)
        except Exception as error:  # any broker failure: the caller decides whether to try again
            logger.warning("not sent to %s: %s", RESULTS_QUEUE, error)
            return False
        return True

    return send


def filesystem_transport_options(folder: Path) -> dict[str, object]:
    """The filesystem broker's folders, as the site's settings name them under its var/ (development only)."""
    return {
        "data_folder_in": str(folder / "broker"),
        "data_folder_out": str(folder / "broker"),
        "processed_folder": str(folder / "broker-processed"),
        "control_folder": str(folder / "broker-control"),
        "store_processed": False,
        "polling_interval": 0.2,
    }


def make_app(broker: str, broker_folder: Path | None) -> Any:
    from celery import Celery

    app = Celery("kernelindex-rerun-worker", broker=broker, set_as_current=True)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=3.0,
        broker_transport_options=filesystem_transport_options(broker_folder)
        if broker.startswith("filesystem") and broker_folder
        else {"visibility_timeout": 3600},
        worker_hijack_root_logger=True,
    )
    return app


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m harness.worker", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--broker", default=os.environ.get("KERNELINDEX_BROKER_URL") or os.environ.get("CELERY_BROKER_URL")
    )
    parser.add_argument("--class", dest="hardware", default=os.environ.get("KERNELINDEX_HARDWARE_CLASS"))
    parser.add_argument("--key", type=Path, default=os.environ.get("KERNELINDEX_WORKER_KEY_FILE"))
    parser.add_argument("--hostname", default=None, help="this instance's name (default NAME@host)")
    parser.add_argument("--broker-folder", type=Path, default=None, help="the filesystem broker's folder")
    parser.add_argument("--unsandboxed", action="store_true", default=os.environ.get("RERUN_UNSANDBOXED") == "true")
    parser.add_argument("--loglevel", default="info")
    options = parser.parse_args(argv)
    for name, flag in (("broker", "--broker"), ("hardware", "--class"), ("key", "--key")):
        if not getattr(options, name):
            parser.error(f"{flag} is required (or its environment variable)")
    return options


def main(argv: list[str] | None = None) -> None:
    options = parse_arguments(argv)
    worker = read_key_file(options.key)
    hardware = hardware_class_named(options.hardware).name
    app = make_app(options.broker, options.broker_folder)
    instance = options.hostname or f"{worker.name}@{socket.gethostname()}"
    state = WorkerState(
        worker,
        hardware,
        instance,
        options.unsandboxed,
        float(os.environ.get("RERUN_HEARTBEAT_SECONDS", "10")),
        sender(app),
    )

    @app.task(name=JOB_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
    def rerun_job(job: dict[str, Any]) -> None:
        state.run(job)

    from celery.signals import worker_ready, worker_shutting_down

    @worker_ready.connect(weak=False)
    def start_beating(**kwargs: Any) -> None:
        threading.Thread(target=state.beat_until_stopped, name="worker-beat", daemon=True).start()

    @worker_shutting_down.connect(weak=False)
    def say_stopping(**kwargs: Any) -> None:
        state.stopped.set()
        state.send(message(worker, "stopped", instance=instance))

    # Solo: one job at a time in the main process; the beats come from a thread beside it.
    app.worker_main(
        [
            "worker",
            "--queues",
            queue_of(hardware),
            "--pool",
            "solo",
            "--hostname",
            instance,
            "--loglevel",
            options.loglevel,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
    )


if __name__ == "__main__":
    main()
