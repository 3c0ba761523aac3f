"""The rerun worker (python -m harness.worker) with what comes off the broker: jobs are hostile until checked.

The harness itself is not run here (tests/runs/test_rerun_worker.py runs it through real workers): these
check what the worker does with a job before and after, and the command line it builds.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from harness import worker
from records.attestation import WorkerIdentity, new_private_key

JOB: dict[str, Any] = {
    "jobId": "a" * 32,
    "request": 3,
    "run": "0123456789ab",
    "runDigest": "sha256:" + "3" * 64,
    "hardwareClass": "cpu",
    "workload": {"spec": {"definition": {"document": {"name": "d"}}, "cases": [{"uuid": "c1"}]}},
    "implementation": {"spec": {"solution": {"name": "s"}}},
    "harness": {"device": "cpu", "protocol": "kernelindex", "timeout": 120, "memory-mb": 1024},
    "sentAt": "2026-08-24T10:00:00Z",
}


@pytest.fixture
def state(monkeypatch: pytest.MonkeyPatch) -> tuple[worker.WorkerState, list[dict[str, Any]], list[str]]:
    """A worker whose harness is not run (each job it would run is noted), and the messages it sends."""
    identity = WorkerIdentity("gpu-1", ("cpu",), new_private_key())
    sent: list[dict[str, Any]] = []
    ran: list[str] = []

    def attest(job: worker.RerunJob, identity: WorkerIdentity, *, unsandboxed: bool = False) -> worker.Attestation:
        ran.append(job.jobId)
        return worker.Attestation({"payload": "", "payloadType": "", "signatures": []}, "log")

    monkeypatch.setattr(worker, "attest_job", attest)

    def send(message: dict[str, Any]) -> bool:
        sent.append(message)
        return True

    return worker.WorkerState(identity, "cpu", "gpu-1@host", False, 1.0, send), sent, ran


def kinds(sent: list[dict[str, Any]]) -> list[str]:
    return [json.loads(base64.b64decode(message["payload"]))["type"] for message in sent]


def test_a_job_runs_once_however_often_it_was_sent_before_it_was_taken(state: Any) -> None:
    worker_state, sent, ran = state
    worker_state.run(JOB)
    worker_state.run(JOB)
    assert ran == ["a" * 32]
    assert kinds(sent) == ["started", "result"]
    # Sent again after it was taken: the site never heard of it (its "started" was lost), so it runs again.
    worker_state.run(JOB | {"sentAt": "2999-01-01T00:00:00Z"})
    assert ran == ["a" * 32] * 2 and kinds(sent) == ["started", "result"] * 2


@pytest.mark.parametrize(
    "change",
    [
        {"hardwareClass": "nvidia-h100"},  # another class's
        {"harness": {"device": "cpu", "unsandboxed": True}},
        {"harness": {"device": "cpu", "json": "/root/.ssh/authorized_keys"}},
        {"harness": {"device": "cpu", "protocol": "--unsandboxed"}},
        {"jobId": "../../etc"},
        {"workload": "not a document"},
        {"extra": "field"},
        {"sentAt": "yesterday"},
    ],
)
def test_a_job_it_may_not_run_is_dropped_unrun_and_unanswered(state: Any, change: dict[str, Any]) -> None:
    worker_state, sent, ran = state
    worker_state.run(JOB | change)
    assert (ran, sent) == ([], [])


def test_the_command_line_is_the_jobs_options_one_each_and_the_files_the_worker_chose(tmp_path: Path) -> None:
    job = worker.read_job(JOB)
    command = worker.harness_command(job, tmp_path, unsandboxed=False)
    assert command[command.index("--json") + 1] == str(tmp_path / "result.json")
    options = command[command.index("--json") + 2 :]
    assert options == ["--device", "cpu", "--protocol", "kernelindex", "--timeout", "120", "--memory-mb", "1024"]
    assert "--unsandboxed" in worker.harness_command(job, tmp_path, unsandboxed=True)


def test_documents_that_are_no_definition_give_no_result_and_start_no_harness(tmp_path: Path) -> None:
    job = worker.read_job(JOB | {"workload": {"spec": {}}})
    outcome = worker.run_harness(job, tmp_path, unsandboxed=False)
    assert outcome.result is None and "not a runnable Workload" in outcome.log_tail
    assert not (tmp_path / "harness.log").exists()
