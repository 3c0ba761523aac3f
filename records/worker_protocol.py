"""What the site and a rerun worker say to each other over the broker, and nothing else.

The site sends a job (RerunJob, in a DSSE envelope signed with the site's own
key: sign_job) to its hardware class's queue (`reruns.<class>`,
records.hardware); the worker checks the site's signature before it
reads anything else (read_signed_job), and (harness/parent/worker.py) answers on the
results queue with signed messages (WorkerMessage, in DSSE envelopes,
records.attestation): it took a job, it is alive, it stops, and its result,
which carries the signed attestation. A worker holds no database, so these are
the whole contract between the two sides; both import them from here.

Everything in a job or a message came through the broker, which a GPU host can
write to: each is signed by its sender and checked strictly before anything
acts on it. A job a broker holder rewrote (its options, its documents, its
class) no longer verifies, and no worker runs it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel, ConfigDict, Field, field_validator

from records.attestation import (
    JOB_ID_PATTERN,
    JOB_PAYLOAD_TYPE,
    WORKER_NAME_PATTERN,
    AttestationError,
    moment,
    read_envelope,
    sign_envelope,
    verify_envelope,
)
from records.rerun import rerun_precision

# Task names and the results queue, as both sides send and consume them.
JOB_TASK = "kernelindex.rerun_job"
MESSAGE_TASK = "kernelindex.worker_message"
RESULTS_QUEUE = "kernelindex.results"
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
# How much of the harness's log a result message may carry (the moderators' rerun page shows it).
LOG_TAIL_CHARS = 4000

# The harness options a job may set (`python -m harness run --NAME VALUE`; a bool option is a flag, given
# when True), with the types a value may have. The site chooses them per request (verification.reruns.harness_options)
# and the worker turns them into the command line (harness.worker.harness_command), so an option more is a
# line here and a line there. Where the files are, and whether the sandbox is on, are the worker's alone: no
# job names them.
HARNESS_OPTIONS: dict[str, tuple[type, ...]] = {
    "device": (str,),
    "protocol": (str,),
    "timeout": (int, float),
    "memory-mb": (int,),
    # Pairs until each case's speedup interval is within this fraction of its median (records.rerun
    # rerun_precision), for at most this many seconds of pairs a case.
    "precision": (float,),
    "case-budget": (int, float),
}
# An option's value as it reaches the command line: a word, never something argparse would read as an option.
OPTION_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")


def rerun_harness_options(
    *, device: str, protocol: str, tolerance: float, case_budget: float, timeout: float, memory_mb: int | None = None
) -> dict[str, str | int | float | bool]:
    """The options every rerun is run with, by the site's settings: a job's `harness` (verification.reruns), and what a
    benchmark of reruns runs (bench/verdicts, demo/measure.py), so both measure alike."""
    options: dict[str, str | int | float | bool] = {
        "device": device,
        "protocol": protocol,
        "timeout": timeout,
        "precision": rerun_precision(tolerance),
        "case-budget": float(case_budget),
    }
    if memory_mb:
        options["memory-mb"] = memory_mb
    return options


def harness_arguments(options: Mapping[str, str | int | float | bool]) -> list[str]:
    """Options as `python -m harness run` takes them: `--NAME VALUE` each, a flag where its value is True."""
    arguments: list[str] = []
    for name, value in options.items():
        if isinstance(value, bool):
            arguments += [f"--{name}"] if value else []
        else:
            arguments += [f"--{name}", f"{value:g}" if isinstance(value, float) else str(value)]
    return arguments


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class RerunJob(_Closed):
    """One attempt of a rerun request, as its worker is sent it: the run's documents, the options, a fresh id.

    The job id is new for every attempt (verification.reruns.new_job_id): an attestation answers one job, once.
    """

    jobId: str = Field(pattern=JOB_ID_PATTERN)  # noqa: N815 (the JSON's spelling)
    request: int = Field(ge=1)
    run: str = Field(min_length=1, max_length=16)
    runDigest: str = Field(pattern=DIGEST_PATTERN)  # noqa: N815
    # What the result run's title names the definition (records.rerun.RerunOf): the worker makes the result run
    # it signs (records.attestation.RESULT_RUN_SUBJECT) exactly as the collector stores it.
    definition: str = Field(max_length=500)
    hardwareClass: str = Field(max_length=64)  # noqa: N815
    # The run's Workload (definition, reference and cases) and Implementation (the solution) documents, whole.
    workload: dict[str, Any]
    implementation: dict[str, Any]
    harness: dict[str, str | int | float | bool]
    # When the site sent this copy (its clock): the sweep sends a job again while it waits, and a worker runs a
    # copy again only if it was sent after the worker took the job, when the site cannot have heard it did.
    sentAt: str = Field(max_length=40)  # noqa: N815
    # The key ids of workers that must not run it: a rerun for the quorum (records/quorum.py) goes to a worker
    # that has not voted on this version. The site refuses their claim whatever they do; the job says it so that
    # such a worker drops it at once instead of running it for nothing.
    notBy: list[str] = Field(default_factory=list, max_length=1000)  # noqa: N815

    @field_validator("sentAt")
    @classmethod
    def _a_time(cls, text: str) -> str:
        try:
            moment(text)
        except AttestationError as error:
            raise ValueError(str(error)) from None
        return text

    @field_validator("harness")
    @classmethod
    def _known_options(cls, options: dict[str, str | int | float | bool]) -> dict[str, str | int | float | bool]:
        for name, value in options.items():
            allowed = HARNESS_OPTIONS.get(name)
            if allowed is None:
                raise ValueError(f"harness option {name!r} is not one a job may set ({', '.join(HARNESS_OPTIONS)})")
            if isinstance(value, bool) and bool in allowed:
                continue  # a flag: given when True
            # A whole number is a float's value too: the canonical JSON a job is signed in writes 1.0 as 1.
            wanted = (*allowed, int) if float in allowed else allowed
            if isinstance(value, bool) or not isinstance(value, wanted):
                raise ValueError(
                    f"harness option {name!r}: {value!r} is not a {' or '.join(t.__name__ for t in allowed)}"
                )
            if not OPTION_VALUE.fullmatch(str(value)):
                raise ValueError(f"harness option {name!r}: {value!r} is not a plain value")
        return options


class WorkerMessage(_Closed):
    """What a worker signs and sends on the results queue (in a DSSE envelope of MESSAGE_PAYLOAD_TYPE).

    started: it took `job`. beat: it is alive, serving `classes`, on `job` if any. stopped: it stops cleanly.
    result: its `attestation` of `job` (an envelope of its own, the one the site publishes) and its log's tail,
    which only moderators see.
    """

    type: Literal["started", "beat", "stopped", "result"]
    worker: str = Field(pattern=WORKER_NAME_PATTERN)
    # This process of the worker (NAME@host), as the pages and the admin name it.
    instance: str = Field(pattern=r"^[\x21-\x7e]{1,255}$")
    at: str = Field(max_length=40)
    classes: list[str] = Field(default_factory=list, max_length=16)
    job: str | None = Field(default=None, pattern=JOB_ID_PATTERN)
    attestation: dict[str, Any] | None = None
    logTail: str = Field(default="", max_length=LOG_TAIL_CHARS)  # noqa: N815


def sign_job(job: RerunJob, site_key: Ed25519PrivateKey) -> dict[str, Any]:
    """A job as the site sends it: signed with the site's key, so that no one who can write to the broker can
    rewrite it (its options, documents or class) or make one up."""
    return sign_envelope(JOB_PAYLOAD_TYPE, job.model_dump(), site_key)


def read_signed_job(value: Any, site_key: str) -> RerunJob:
    """A job off the queue: its envelope signed by the site's key (base64), then its body checked strictly.
    AttestationError or ValueError (pydantic's) says why not."""
    envelope = read_envelope(value)
    if envelope.payloadType != JOB_PAYLOAD_TYPE:
        raise AttestationError(f"a {envelope.payloadType!r}, not a rerun job")
    return RerunJob.model_validate(verify_envelope(envelope, site_key))
