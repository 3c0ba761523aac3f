"""A rerun worker that holds no database: `python -m harness.worker`.

It needs three things: the broker's URL, its hardware class, and its signing
key (the file `manage.py worker_key create NAME --class CLASS` printed once):

    python -m harness.worker --class nvidia-h100 --key worker.key \
        --broker rediss://kernelindex-worker-nvidia-h100:PASSWORD@queue.example:6380/0

(or KERNELINDEX_BROKER_URL, KERNELINDEX_HARDWARE_CLASS, KERNELINDEX_WORKER_KEY_FILE; the class defaults to
the key's one class; the URL names the Redis user of the class, records/broker.py). It consumes its class's
queue (`reruns.<class>`). A job (records.worker_protocol.RerunJob) carries everything the harness needs: the
run's Workload and Implementation documents, the harness options and a job id.
The worker runs `python -m harness run` on them in a subprocess that sees none
of its environment but the timing setup (HARNESS_ENVIRONMENT), and answers on
the results queue with messages it signs: it took the job, it is alive (every
RERUN_HEARTBEAT_SECONDS), its result with the signed attestation
(records.attestation), it stops. It reads nothing back from the site.

It imports no Django: only harness/, records/, celery and kombu.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import signal
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

from celery import Celery
from pydantic import ValidationError

from harness.jail.cgroups import remove_abandoned
from records.attestation import (
    MESSAGE_PAYLOAD_TYPE,
    STATEMENT_PAYLOAD_TYPE,
    AttestationError,
    WorkerIdentity,
    load_public_key,
    moment,
    read_key_file,
    rerun_statement,
    sign_envelope,
)
from records.broker import WORKER_TRANSPORT_OPTIONS
from records.canonical import canonical_text, digest, parse_json
from records.hardware import UnknownHardwareClassError, hardware_class_named, queue_of
from records.rerun import RerunOf, rerun_manifest
from records.sources.runnable import harness_definition
from records.worker_protocol import (
    JOB_TASK,
    LOG_TAIL_CHARS,
    MESSAGE_TASK,
    RESULTS_QUEUE,
    RerunJob,
    harness_arguments,
    read_signed_job,
)

logger = logging.getLogger("harness.worker")

ROOT = Path(__file__).resolve().parents[2]
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
# Beyond the harness's own time limit: its start (two sandboxes importing torch) and its clean-up.
HARNESS_MARGIN_SECONDS = 120
DEFAULT_TIMEOUT_SECONDS = 600


class JobError(Exception):
    """A job this worker will not run; the message says why."""


def now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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


# -- one job -----------------------------------------------------------------------------------------


def read_job(value: Any, site_key: str) -> RerunJob:
    """A job as it came off the queue: signed by the site (its key from the worker's key file), then checked
    (records.worker_protocol.RerunJob). Anyone who can write to the broker can put a job there; only the site
    can sign one."""
    try:
        return read_signed_job(value, site_key)
    except AttestationError as error:
        raise JobError(f"not a job the site signed: {error}") from None
    except ValidationError as error:
        problem = error.errors()[0]
        raise JobError(f"{'.'.join(str(p) for p in problem['loc'])}: {problem['msg']}") from None


def write_job_files(job: RerunJob, folder: Path) -> None:
    """The definition, its cases and the solution, in the formats the harness reads."""
    try:
        definition = harness_definition(job.workload)
        cases = job.workload["spec"].get("cases") or []
        solution = job.implementation["spec"]["solution"]
    except (KeyError, TypeError, AttributeError) as error:
        raise JobError(f"the job's documents are not a runnable Workload and Implementation: {error!r}") from None
    folder.mkdir(parents=True, exist_ok=True)
    # json.dumps, not the canonical form: the order of inputs and outputs is the order of the arguments.
    (folder / "definition.json").write_text(json.dumps(definition))
    (folder / "workload.jsonl").write_text("".join(canonical_text(case) + "\n" for case in cases))
    (folder / "solution.json").write_text(canonical_text(solution))


def harness_command(job: RerunJob, folder: Path, *, unsandboxed: bool) -> list[str]:
    """`python -m harness run` on the job's files in `folder`, with the options the job names (one each)."""
    command = [sys.executable, "-m", "harness", "run"]
    command += ["--definition", str(folder / "definition.json"), "--workload", str(folder / "workload.jsonl")]
    command += ["--solution", str(folder / "solution.json"), "--json", str(folder / "result.json")]
    command += harness_arguments(job.harness)
    if unsandboxed:
        command.append("--unsandboxed")
    return command


@dataclass(frozen=True)
class HarnessOutcome:
    """What one harness process left: its JSON result (None if it wrote none), its log's tail, its time."""

    result: dict[str, Any] | None
    log_tail: str
    seconds: float


def _die_with_parent() -> None:
    """In the harness process: die with the worker, so a killed worker leaves no evaluation running."""
    PR_SET_PDEATHSIG = 1  # noqa: N806 (the kernel's name)
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def run_harness(job: RerunJob, folder: Path, *, unsandboxed: bool) -> HarnessOutcome:
    """The harness's result on the job; documents the harness cannot be given are a run with no result."""
    try:
        write_job_files(job, folder)
    except JobError as error:
        return HarnessOutcome(None, f"worker: {error}", 0.0)
    command = harness_command(job, folder, unsandboxed=unsandboxed)
    # The harness enforces its own limit; this one catches a harness that could not.
    # Twice the harness's limit: a timeout is evaluated again with the reference as the solution (harness.parent.api).
    deadline = 2 * float(job.harness.get("timeout", DEFAULT_TIMEOUT_SECONDS)) + HARNESS_MARGIN_SECONDS
    log_path = folder / "harness.log"
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=harness_environment(job.hardwareClass),
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
            # Its served processes, frozen between requests, outlive it with their memory: freed now, not when
            # the next job comes.
            remove_abandoned()
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


@dataclass(frozen=True)
class Attestation:
    """A job's signed attestation, and what goes beside it to the site alone (the harness's log)."""

    envelope: dict[str, Any]
    log_tail: str


def attest_job(job: RerunJob, identity: WorkerIdentity, *, unsandboxed: bool = False) -> Attestation:
    """Run the job's harness; the signed attestation of what it gave."""
    started_at = now_text()
    with tempfile.TemporaryDirectory(prefix=f"rerun-{job.request}-") as folder:
        outcome = run_harness(job, Path(folder), unsandboxed=unsandboxed)
    result = dict(outcome.result) if outcome.result is not None else None
    if result is not None:
        # The kernel's own output: the moderators read it in the log, it is no evidence and is not published.
        result.pop("log_tail", None)
    finished_at = now_text()
    predicate = {
        "jobId": job.jobId,
        "request": job.request,
        "run": job.run,
        "worker": identity.name,
        "hardwareClass": job.hardwareClass,
        "workloadDigest": digest(job.workload),
        "implementationDigest": digest(job.implementation),
        "harnessOptions": dict(job.harness),
        "result": result,
        "startedAt": started_at,
        "finishedAt": finished_at,
        "harnessSeconds": round(outcome.seconds, 3),
    }
    result_run = result_run_digest(job, result, finished_at)
    statement = rerun_statement(run_digest=job.runDigest, predicate=predicate, result_run_digest=result_run)
    return Attestation(sign_envelope(STATEMENT_PAYLOAD_TYPE, statement, identity.key), outcome.log_tail)


def result_run_digest(job: RerunJob, result: dict[str, Any] | None, observed_at: str) -> str | None:
    """The digest of the run the site will store for this result (records.rerun.rerun_manifest, observed when
    the harness finished): signed with it, so that the run the pages show is the one this worker measured."""
    if result is None:
        return None
    of = RerunOf(job.run, job.runDigest, job.definition, job.request)
    manifest = rerun_manifest(
        of, result, workload=job.workload, implementation=job.implementation, observed_at=observed_at
    )
    return digest(manifest["run"])


def worker_message(identity: WorkerIdentity, kind: str, instance: str, **fields: Any) -> dict[str, Any]:
    """A signed message of this worker's (records.worker_protocol.WorkerMessage)."""
    body = {"type": kind, "worker": identity.name, "instance": instance, "at": now_text(), **fields}
    return sign_envelope(MESSAGE_PAYLOAD_TYPE, body, identity.key)


# -- the Celery worker -----------------------------------------------------------------------------------


@dataclass
class WorkerState:
    """One worker process: who it is, what it serves, the job it is on, and how it reaches the site."""

    identity: WorkerIdentity
    # The site's public key (base64): the jobs this worker runs are the ones it signed.
    site_key: str
    hardware: str
    instance: str
    unsandboxed: bool
    heartbeat_seconds: float
    send: Callable[[dict[str, Any]], bool]
    job: str | None = None
    # The jobs this process took, and when. The site's sweep sends a job again while it waits: a copy sent before
    # the job was taken is that, and is dropped; one sent after means the site never heard it was taken (the
    # message was lost with the broker), and it runs again.
    taken: dict[str, datetime] = field(default_factory=dict)
    # The jobs this process attested: never run again, whoever sends them.
    attested: set[str] = field(default_factory=set)
    stopped: threading.Event = field(default_factory=threading.Event)

    def say(self, kind: str, **fields: Any) -> bool:
        return self.send(worker_message(self.identity, kind, self.instance, **fields))

    def beat_until_stopped(self) -> None:
        while not self.stopped.is_set():
            self.say("beat", classes=[self.hardware], job=self.job)
            self.stopped.wait(self.heartbeat_seconds)

    def run(self, value: Any) -> None:
        try:
            job = read_job(value, self.site_key)
        except JobError as refusal:
            logger.error("a job refused: %s", refusal)
            return
        if job.hardwareClass != self.hardware:
            logger.error(
                "job %s is for class %s, not this worker's %s: dropped", job.jobId, job.hardwareClass, self.hardware
            )
            return
        if self.identity.key_id in job.notBy:
            # A quorum rerun of a version this worker reran already: another worker's to take. Dropped, not put
            # back: the site's sweep sends it again later, so a lone worker cannot make it bounce.
            logger.info("job %s (rerun #%s) is for another worker than this key's: dropped", job.jobId, job.request)
            return
        if job.jobId in self.attested:
            logger.warning("job %s was run and attested already: dropped", job.jobId)
            return
        if job.jobId in self.taken and moment(job.sentAt) <= self.taken[job.jobId]:
            logger.info("job %s was sent again before this worker took it: dropped", job.jobId)
            return
        self.taken[job.jobId] = datetime.now(UTC)
        self.job = job.jobId
        try:
            self.say("started", job=job.jobId, classes=[self.hardware])
            attestation = attest_job(job, self.identity, unsandboxed=self.unsandboxed)
            self.attested.add(job.jobId)
            message = worker_message(
                self.identity,
                "result",
                self.instance,
                job=job.jobId,
                attestation=attestation.envelope,
                logTail=attestation.log_tail,
            )
            # The result must reach the site: with the broker down it waits here, beating, until it is back.
            while not self.send(message) and not self.stopped.is_set():
                time.sleep(min(self.heartbeat_seconds, 5))
            logger.info("job %s (rerun #%s) attested", job.jobId, job.request)
        finally:
            self.job = None


def sender(app: Any) -> Callable[[dict[str, Any]], bool]:
    def send(envelope: dict[str, Any]) -> bool:
        try:
            # declare=[]: the site declares the results queue; this worker's Redis user may only push to it
            # (records/broker.py), and declaring would read its length and write its bindings.
            app.send_task(MESSAGE_TASK, args=(envelope,), queue=RESULTS_QUEUE, retry=False, declare=[])
        except Exception as error:  # any broker failure: the caller decides whether to try again
            logger.warning("not sent to %s: %s", RESULTS_QUEUE, error)
            return False
        return True

    return send


def filesystem_transport_options(folder: Path) -> dict[str, object]:
    """The filesystem broker's folders under `folder`, as the site's settings name them (development only)."""
    return {
        "data_folder_in": str(folder / "broker"),
        "data_folder_out": str(folder / "broker"),
        "processed_folder": str(folder / "broker-processed"),
        "control_folder": str(folder / "broker-control"),
        "store_processed": False,
        "polling_interval": 0.2,
    }


def make_app(broker: str, broker_folder: Path | None) -> Celery:
    app = Celery("kernelindex-rerun-worker", set_as_current=True)
    app.conf.update(
        # Read and write URLs too: Celery would prefer a CELERY_BROKER_URL in the environment to broker_url.
        broker_url=broker,
        broker_read_url=broker,
        broker_write_url=broker,
        broker_transport_options=transport_options(broker, broker_folder),
        broker_connection_retry_on_startup=True,
        # A GPU host waits for its broker however long it is away.
        broker_connection_max_retries=None,
        broker_connection_timeout=3.0,
        accept_content=["json"],
        task_serializer="json",
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        worker_prefetch_multiplier=1,
        # No remote control: its pidbox queue and broadcast channel are keys and channels this worker's Redis
        # user is not given (records/broker.py), and nobody sends a rerun worker commands.
        worker_enable_remote_control=False,
    )
    return app


def transport_options(broker: str, broker_folder: Path | None) -> dict[str, object]:
    """On Redis, the routing both sides share and no ack emulation, so that this worker touches only the keys its
    Redis user is given (records/broker.py); the filesystem broker's folders in development."""
    if broker.startswith("redis"):
        return dict(WORKER_TRANSPORT_OPTIONS)
    return filesystem_transport_options(broker_folder) if broker.startswith("filesystem") and broker_folder else {}


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m harness.worker", description=__doc__.split("\n\n")[0])
    environ = os.environ.get
    parser.add_argument("--broker", default=environ("KERNELINDEX_BROKER_URL") or environ("CELERY_BROKER_URL"))
    parser.add_argument("--class", dest="hardware", default=environ("KERNELINDEX_HARDWARE_CLASS"))
    parser.add_argument("--key", type=Path, default=environ("KERNELINDEX_WORKER_KEY_FILE"))
    parser.add_argument(
        "--site-key",
        default=environ("KERNELINDEX_SITE_KEY"),
        help="the site's public key, which signs every job (default: the one the key file names)",
    )
    parser.add_argument("--hostname", default=None, help="this process's name (default NAME@host); %%h is the host")
    parser.add_argument("--broker-folder", type=Path, help="the filesystem:// broker's folder (development)")
    parser.add_argument("--unsandboxed", action="store_true", default=environ("RERUN_UNSANDBOXED") == "true")
    parser.add_argument("--heartbeat", type=float, default=float(environ("RERUN_HEARTBEAT_SECONDS") or 10))
    parser.add_argument("--loglevel", default="info")
    options = parser.parse_args(argv)
    for name, flag in (("broker", "--broker"), ("key", "--key")):
        if not getattr(options, name):
            parser.error(f"{flag} is required (or its environment variable)")
    return options


def identity_and_class(key_file: Path, hardware: str | None) -> tuple[WorkerIdentity, str]:
    """The worker's key, and the class it serves: the one named, which its key must be registered for."""
    try:
        identity = read_key_file(key_file.read_text())
    except (OSError, AttestationError) as error:
        raise SystemExit(f"{key_file}: {error}") from None
    if hardware is None and len(identity.classes) == 1:
        hardware = identity.classes[0]
    try:
        named = hardware_class_named(hardware or "").name
    except UnknownHardwareClassError as unknown:
        raise SystemExit(f"--class: {unknown}") from None
    if named not in identity.classes:
        raise SystemExit(f"worker {identity.name}'s key is registered for {', '.join(identity.classes)}, not {named}")
    return identity, named


def site_key_of(identity: WorkerIdentity, named: str | None) -> str:
    """The site's public key that the worker checks jobs with: the one named, else its key file's."""
    site_key = named or identity.site_key
    if not site_key:
        raise SystemExit(
            f"worker {identity.name}: no site key to check jobs with; its key file predates signed jobs "
            "(make a new one with manage.py worker_key create) or give --site-key / KERNELINDEX_SITE_KEY"
        )
    try:
        load_public_key(site_key)
    except AttestationError as error:
        raise SystemExit(f"--site-key: {error}") from None
    return site_key


def main(argv: list[str] | None = None) -> None:
    from celery.signals import worker_ready, worker_shutdown
    from celery.utils.nodenames import host_format

    options = parse_arguments(argv)
    identity, hardware = identity_and_class(options.key, options.hardware)
    site_key = site_key_of(identity, options.site_key)
    app = make_app(options.broker, options.broker_folder)
    instance = host_format(options.hostname or f"{identity.name}@%h")
    state = WorkerState(identity, site_key, hardware, instance, options.unsandboxed, options.heartbeat, sender(app))

    @app.task(name=JOB_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
    def rerun_job(job: Mapping[str, Any]) -> None:
        state.run(job)

    @worker_ready.connect(weak=False)
    def start_beating(**kwargs: Any) -> None:
        threading.Thread(target=state.beat_until_stopped, name="worker-beat", daemon=True).start()

    @worker_shutdown.connect(weak=False)
    def say_stopping(**kwargs: Any) -> None:
        # After the job in hand is done (a warm shutdown finishes it): until then the site hears the beats.
        state.stopped.set()
        state.say("stopped")

    logger.warning("worker %s (%s) consumes %s", instance, identity.name, queue_of(hardware))
    # Solo: one job at a time, in this process; the beats come from a thread beside it.
    consuming = ["--queues", queue_of(hardware), "--pool", "solo", "--hostname", instance]
    quiet = ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    app.worker_main(["worker", *consuming, "--loglevel", options.loglevel, *quiet])
