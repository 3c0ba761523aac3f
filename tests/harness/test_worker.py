"""The rerun worker (python -m harness.worker) with what comes off the broker: jobs are hostile until checked,
and a job is the site's only when the site's key signed it.

The harness itself is not run here (tests/runs/test_rerun_worker.py runs it through real workers): these
check what the worker does with a job before and after, and the command line it builds.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from harness.parent import worker
from records.attestation import (
    JOB_PAYLOAD_TYPE,
    WorkerIdentity,
    new_private_key,
    public_key_text,
    sign_envelope,
)

# The site's key, which signs every job; the worker knows its public half (from its key file).
SITE_KEY = new_private_key()
SITE_PUBLIC_KEY = public_key_text(SITE_KEY.public_key())

JOB: dict[str, Any] = {
    "jobId": "a" * 32,
    "request": 3,
    "run": "0123456789ab",
    "runDigest": "sha256:" + "3" * 64,
    "definition": "d",
    "hardwareClass": "cpu",
    "workload": {"spec": {"definition": {"document": {"name": "d"}}, "cases": [{"uuid": "c1"}]}},
    "implementation": {"spec": {"solution": {"name": "s"}}},
    "harness": {"device": "cpu", "protocol": "kernelindex", "timeout": 120, "memory-mb": 1024},
    "sentAt": "2026-08-24T10:00:00Z",
}


def signed(job: dict[str, Any], key: Any = SITE_KEY) -> dict[str, Any]:
    """A job as the site sends it: in an envelope its key signed."""
    return sign_envelope(JOB_PAYLOAD_TYPE, job, key)


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

    return worker.WorkerState(identity, SITE_PUBLIC_KEY, "cpu", "gpu-1@host", False, 1.0, send), sent, ran


def kinds(sent: list[dict[str, Any]]) -> list[str]:
    return [json.loads(base64.b64decode(message["payload"]))["type"] for message in sent]


def test_a_job_runs_once_however_often_it_was_sent_before_it_was_taken(state: Any) -> None:
    worker_state, sent, ran = state
    worker_state.run(signed(JOB))
    worker_state.run(signed(JOB))
    assert ran == ["a" * 32]
    assert kinds(sent) == ["started", "result"]
    # Sent again, signed, after it was taken: it was run and attested already, so it is not run again.
    worker_state.run(signed(JOB | {"sentAt": "2999-01-01T00:00:00Z"}))
    assert ran == ["a" * 32] and kinds(sent) == ["started", "result"]


def test_a_job_taken_but_never_attested_runs_again_when_the_site_sends_it_again(state: Any) -> None:
    worker_state, _, ran = state
    worker_state.taken["a" * 32] = worker.datetime(2026, 8, 24, 10, 0, 1, tzinfo=worker.UTC)
    worker_state.run(signed(JOB))  # a copy sent before it was taken
    assert ran == []
    # Sent after it was taken: the site never heard it was taken (its "started" was lost), so it runs again.
    worker_state.run(signed(JOB | {"sentAt": "2026-08-24T10:05:00Z"}))
    assert ran == ["a" * 32]


def test_a_job_the_site_did_not_sign_is_dropped_unrun_and_unanswered(state: Any) -> None:
    worker_state, sent, ran = state
    genuine = signed(JOB)
    rewritten = JOB | {"harness": JOB["harness"] | {"precision": 0.9, "case-budget": 0.2, "timeout": 5}}
    forged_payload = signed(rewritten)["payload"]
    for value in [
        JOB,  # bare, as a broker holder would push it
        signed(rewritten, new_private_key()),  # signed by a key of the broker holder's
        genuine | {"payload": forged_payload},  # the site's signature kept, the options rewritten
        genuine | {"payloadType": "application/vnd.kernelindex.worker-message+json"},
        sign_envelope("application/vnd.kernelindex.worker-message+json", JOB, SITE_KEY),  # the site's, not a job
    ]:
        worker_state.run(value)
    assert (ran, sent) == ([], [])
    worker_state.run(genuine)
    assert ran == ["a" * 32]


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
    worker_state.run(signed(JOB | change))  # signed by the site, and still not runnable
    assert (ran, sent) == ([], [])


def test_a_quorum_job_for_another_key_is_dropped_unrun_and_another_key_runs_it(state: Any) -> None:
    worker_state, sent, ran = state
    own = worker_state.identity.key_id
    worker_state.run(signed(JOB | {"notBy": [own]}))  # this key reran the version already: another's job
    assert (ran, sent) == ([], [])
    worker_state.run(signed(JOB | {"notBy": ["sha256:" + "9" * 64]}))
    assert ran == ["a" * 32] and kinds(sent) == ["started", "result"]


def test_the_command_line_is_the_jobs_options_one_each_and_the_files_the_worker_chose(tmp_path: Path) -> None:
    job = worker.read_job(signed(JOB), SITE_PUBLIC_KEY)
    command = worker.harness_command(job, tmp_path, unsandboxed=False)
    assert command[command.index("--json") + 1] == str(tmp_path / "result.json")
    options = command[command.index("--json") + 2 :]
    # One each, in the order the signed (canonical) job lists them.
    assert options == ["--device", "cpu", "--memory-mb", "1024", "--protocol", "kernelindex", "--timeout", "120"]
    assert "--unsandboxed" in worker.harness_command(job, tmp_path, unsandboxed=True)


def test_documents_that_are_no_definition_give_no_result_and_start_no_harness(tmp_path: Path) -> None:
    job = worker.read_job(signed(JOB | {"workload": {"spec": {}}}), SITE_PUBLIC_KEY)
    outcome = worker.run_harness(job, tmp_path, unsandboxed=False)
    assert outcome.result is None and "not a runnable Workload" in outcome.log_tail
    assert not (tmp_path / "harness.log").exists()
