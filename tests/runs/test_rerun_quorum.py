"""The quorum for the top with real rerun workers: two `python -m harness.worker` processes of class cpu, each with
a key of its own registered here, beside the web tier's worker on a real Redis. The demo's honest #1 says
"reproduced by 1 of 2 workers" after one rerun, and "reproduced by 2 workers" after the second, which the policy
asks for itself and which the other key runs (whichever worker the broker hands the job first); and a worker
that disagrees brings a third rerun, which the key that has not voted runs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from harness.parent.worker import worker_message
from runs.models import Run
from tests.pages import visible_text
from tests.results import harness_result
from tests.runs import attested
from tests.runs.conftest import Process, Worker, wait_for
from verification import policy as verification
from verification.collector import collect
from verification.models import RerunRequest, WorkerKey
from verification.reruns import request_rerun
from verification.worker_keys import create_worker_key

pytestmark = pytest.mark.django_db(transaction=True)

TOP = "gemm-torch-mm"  # the honest #1 of the demo's GEMM group


@pytest.fixture
def other_worker(worker: Worker, tmp_path: Path) -> Iterator[Process]:
    """A second rerun worker of the same class, with a key of its own, started as the first one was."""
    key_file = tmp_path / "worker-b.key"
    key_file.write_text(create_worker_key("tests-cpu-b", ["cpu"]).key_file)
    key_file.chmod(0o600)
    environment = {**worker.rerun.environment, "KERNELINDEX_WORKER_KEY_FILE": str(key_file)}
    command = ["tests-b-{n}@%h" if part == "tests-{n}@%h" else part for part in worker.rerun.command]
    process = Process("rerun-b", command, environment, tmp_path)
    process.start()
    process.wait_for("ready.")
    yield process
    process.stop()


def finished(request: RerunRequest, worker: Worker, other: Process) -> RerunRequest:
    wait_for(request)
    request.refresh_from_db()
    assert request.verdict == "reproduced", f"{request.verdict_reason}\n{worker.log()[-2000:]}\n{other.log()[-2000:]}"
    return request


def test_the_top_is_reproduced_by_1_of_2_workers_then_by_2_the_policy_asking_the_other_key(
    client: Client, settings: Any, demo: Callable[[str], Run], worker: Worker, other_worker: Process
) -> None:
    run = demo(TOP)
    first = finished(request_rerun(run, user=None), worker, other_worker)
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert "Quorum: reproduced by 1 of 2 workers" in page
    assert "reproduced by 1 of 2 workers" in visible_text(client.get(run.group.get_absolute_url()).content)

    settings.VERIFICATION_POLICY = True
    (asked,) = verification.apply_policy()  # the quorum's rerun first, and one in flight at a time
    assert asked.run_id == run.pk and asked.requested_by.username == "kernelindex"  # type: ignore[union-attr]
    second = finished(asked, worker, other_worker)
    assert first.attestation is not None and second.attestation is not None
    assert {first.attestation.worker_key.name, second.attestation.worker_key.name} == {"tests-cpu", "tests-cpu-b"}
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert "Quorum: reproduced by 2 workers" in page
    assert "signed by worker tests-cpu " in page and "signed by worker tests-cpu-b " in page
    board = client.get(f"{run.group.get_absolute_url()}.json").json()["runs"]
    assert board[0]["runId"] == run.run_id and board[0]["quorum"]["sentence"] == "reproduced by 2 workers"


def test_a_worker_that_disagrees_brings_a_third_rerun_which_the_other_key_runs(
    client: Client,
    settings: Any,
    demo: Callable[[str], Run],
    worker: Worker,
    other_worker: Process,
) -> None:
    run = demo(TOP)
    first = finished(request_rerun(run, user=None), worker, other_worker)
    assert first.attestation is not None
    # A third registered key says otherwise, through the collector as its worker would: the two real workers are
    # told to leave its job alone, and one of them drops it when the broker hands it over.
    dissenter = attested.worker_identity("tests-cpu-c", ("cpu",))
    real_keys = list(WorkerKey.objects.filter(name__in=["tests-cpu", "tests-cpu-b"]).values_list("key_id", flat=True))
    # Its worker is live: the job is sent, for it alone.
    assert collect(worker_message(dissenter, "beat", "tests-c@host", classes=["cpu"], job=None)) is None
    dissent = request_rerun(run, user=None, not_by=real_keys)
    dropped = "is for another worker than this key's: dropped"
    deadline = time.monotonic() + 60
    while dropped not in worker.rerun.log() + other_worker.log() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert dropped in worker.rerun.log() + other_worker.log()
    dissent.refresh_from_db()
    assert (dissent.state, dissent.worker_key) == ("queued", None)
    attested.attest(attested.claim(dissent, dissenter), harness_result("INCORRECT_NUMERICAL"), identity=dissenter)
    run.refresh_from_db()
    assert run.evidence == "reported"
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert "Quorum: workers disagree: reproduced by 1, not reproduced by 1" in page

    settings.VERIFICATION_POLICY = True
    (third,) = verification.apply_policy()
    assert sorted(third.not_by_keys) == sorted([first.attestation.worker_key.key_id, dissenter.key_id])
    decided = finished(third, worker, other_worker)
    assert decided.attestation is not None
    assert decided.attestation.worker_key.name not in {first.attestation.worker_key.name, "tests-cpu-c"}
    run.refresh_from_db()
    assert run.evidence == "reproduced"
    assert "Quorum: reproduced by 2 workers" in visible_text(client.get(run.get_absolute_url()).content)
