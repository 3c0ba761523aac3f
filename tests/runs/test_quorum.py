"""The quorum for the top, with reruns answered through the collector as workers answer them (tests/runs/attested.py):
a #1 reproduced by one worker says so and gets another worker's rerun from the policy; a second rerun by the same
key adds nothing; workers that disagree bring a third; a lone worker cannot take the quorum's rerun.
tests/runs/test_rerun_quorum.py does the same with real rerun workers."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from harness.parent.worker import worker_message
from records.attestation import WorkerIdentity
from runs.models import Run
from runs.selectors import document_value
from tests.pages import visible_text
from tests.results import drifted, harness_result
from tests.runs import attested
from verification import policy as verification
from verification.collector import collect
from verification.models import RerunRequest
from verification.reruns import request_rerun, send_rerun, sweep_reruns

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("memory_broker")]

TOP = "gemm-torch-mm"  # the honest #1 of the demo's GEMM group


def key(name: str) -> WorkerIdentity:
    return attested.worker_identity(name, ("cpu",))


def beat(identity: WorkerIdentity) -> None:
    """The key's worker says it is alive: a quorum's rerun waits for a live worker of another key."""
    assert collect(worker_message(identity, "beat", f"{identity.name}@tests", classes=["cpu"], job=None)) is None


def reproducing(run: Run, host: str = "") -> dict[str, Any]:
    result = harness_result(median=(run.latency_ns or 1.0) / 2)
    if host:
        result["environment"]["hostId"] = host
    return result


RerunBy = Callable[[RerunRequest, WorkerIdentity, dict[str, Any] | None], RerunRequest]


@pytest.fixture
def rerun_by(django_capture_on_commit_callbacks: Any) -> RerunBy:
    """The worker with this key takes the request's job and attests this result; what the collector's
    transaction retires on commit is retired."""

    def answer(request: RerunRequest, identity: WorkerIdentity, result: dict[str, Any] | None) -> RerunRequest:
        with django_capture_on_commit_callbacks(execute=True):
            return attested.attest(attested.claim(request, identity), result, identity=identity)

    return answer


def quorum_line(client: Client, run: Run) -> str:
    """What the run page says of its quorum, near its evidence level."""
    page = visible_text(client.get(run.get_absolute_url()).content)
    _, found, said = page.partition("Quorum: ")
    return said.partition(" Every rerun")[0] if found else ""


def top_row_evidence(client: Client, run: Run) -> str:
    board = client.get(f"{run.group.get_absolute_url()}.json").json()["runs"]
    first = next(row for row in board if row["rank"] == 1)
    assert first["runId"] == run.run_id
    return first["quorum"]["sentence"]


@pytest.fixture
def policy(settings: Any) -> Any:
    settings.VERIFICATION_POLICY = True
    return settings


def test_a_top_reproduced_by_one_worker_says_1_of_2_and_another_worker_makes_it_2(
    client: Client, demo: Callable[[str], Run], policy: Any, rerun_by: RerunBy
) -> None:
    run = demo(TOP)
    first, second = key("quorum-a"), key("quorum-b")
    rerun_by(request_rerun(run, user=None), first, reproducing(run))
    run.refresh_from_db()
    assert run.evidence == "reproduced"
    assert "reproduced by 1 of 2 workers" in quorum_line(client, run)
    assert "reproduced by 1 of 2 workers" in visible_text(client.get(run.group.get_absolute_url()).content)
    assert top_row_evidence(client, run) == "reproduced by 1 of 2 workers"
    twin = client.get(f"/runs/{run.run_id}.json").json()["evidence"]["quorum"]
    assert (twin["state"], twin["reproducedBy"], twin["size"], twin["needsAnotherWorker"]) == ("pending", 1, 2, True)

    beat(second)
    (asked,) = [request for request in verification.apply_policy() if request.run_id == run.pk]
    assert asked.not_by_keys == [first.key_id]
    assert asked.reason.startswith("verification policy: #1 of gemm_n256_k512")
    rerun_by(asked, second, reproducing(run))
    assert "reproduced by 2 workers" in quorum_line(client, run)
    assert top_row_evidence(client, run) == "reproduced by 2 workers"
    assert not [request for request in verification.apply_policy() if request.run_id == run.pk]


def test_the_key_that_voted_cannot_take_the_quorums_rerun_another_can(
    demo: Callable[[str], Run], rerun_by: RerunBy
) -> None:
    run = demo(TOP)
    first, second = key("quorum-a"), key("quorum-b")
    rerun_by(request_rerun(run, user=None), first, reproducing(run))
    # A moderator's request goes to another worker too, while the quorum is short.
    request = request_rerun(run, user=None)
    assert request.not_by_keys == [first.key_id]
    refusal = collect(worker_message(first, "started", attested.INSTANCE, job=request.job_id, classes=["cpu"]))
    assert refusal is not None and "another worker" in refusal
    request.refresh_from_db()
    assert (request.state, request.worker_key) == ("queued", None)
    assert attested.claim(request, second).state == "running"


def test_a_quorum_rerun_still_queued_a_sweep_after_it_was_sent_is_sent_again_for_another_worker(
    demo: Callable[[str], Run], rerun_by: RerunBy, settings: Any
) -> None:
    """The key that voted drops the job (a worker cannot tell the site, holding no database): the next sweep sends
    it again, where another request waits RERUN_RESEND_AFTER_SECONDS for the broker."""
    run, other = demo(TOP), demo("softmax-fused")
    first = key("quorum-a")
    rerun_by(request_rerun(run, user=None), first, reproducing(run))
    beat(key("quorum-b"))
    quorum_rerun, plain = request_rerun(run, user=None), request_rerun(other, user=None)
    a_sweep_ago = timezone.now() - timedelta(seconds=settings.RERUN_SWEEP_SECONDS + 1)
    RerunRequest.objects.filter(pk__in=[quorum_rerun.pk, plain.pk]).update(sent_at=a_sweep_ago)

    assert sweep_reruns().resent == 1
    quorum_rerun.refresh_from_db()
    plain.refresh_from_db()
    assert quorum_rerun.sent_at > a_sweep_ago and plain.sent_at == a_sweep_ago


def test_a_second_rerun_by_the_same_key_is_shown_and_adds_nothing(
    client: Client, demo: Callable[[str], Run], rerun_by: RerunBy
) -> None:
    run = demo(TOP)
    first = key("quorum-a")
    one = rerun_by(request_rerun(run, user=None), first, reproducing(run))
    again = rerun_by(request_rerun(run, user=None, not_by=[]), first, reproducing(run))
    assert "reproduced by 1 of 2 workers" in quorum_line(client, run)
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert f"Rerun #{one.pk}" in page and f"Rerun #{again.pk}" in page


def test_a_lone_worker_gets_no_quorum_rerun_and_verification_says_why(
    django_capture_on_commit_callbacks: Any, client: Client, demo: Callable[[str], Run], policy: Any, rerun_by: RerunBy
) -> None:
    run = demo(TOP)
    first = key("quorum-a")
    rerun_by(request_rerun(run, user=None), first, reproducing(run))
    assert not [request for request in verification.apply_policy() if request.run_id == run.pk]
    waits = "waits for another worker of cpu"
    assert waits in visible_text(client.get("/verification").content)
    (entry,) = client.get("/verification.json").json()["quorum"]
    assert (entry["runId"], entry["quorum"]["sentence"]) == (run.run_id, "reproduced by 1 of 2 workers")
    assert waits in entry["waitsBecause"]
    twin = client.get(f"/runs/{run.run_id}.json").json()["verification"]
    assert (twin["state"], twin["reason"]) == (
        "quorum",
        f"This #1 is reproduced by 1 of 2 workers; it {waits}: every live worker of it reran this version already "
        "with its key; a quorum needs a different one.",
    )
    # A moderator's request waits unsent rather than bouncing off the one worker there is.
    RerunRequest.objects.filter(state="queued").update(state="cancelled")
    with django_capture_on_commit_callbacks(execute=True):
        request = request_rerun(run, user=None)
    request.refresh_from_db()
    assert (request.state, request.sent_at) == ("queued", None) and "waits for another cpu worker" in request.send_error
    # Another key registered is not enough: its worker must be live.
    other = key("quorum-b")
    assert send_rerun(request.pk) is False
    beat(other)
    assert send_rerun(request.pk) is True


def test_workers_that_disagree_take_the_top_back_to_reported_and_a_third_decides(
    client: Client, demo: Callable[[str], Run], policy: Any, rerun_by: RerunBy
) -> None:
    run = demo(TOP)
    first, second, third = key("quorum-a"), key("quorum-b"), key("quorum-c")
    rerun_by(request_rerun(run, user=None), first, reproducing(run))
    beat(second)
    (asked,) = [request for request in verification.apply_policy() if request.run_id == run.pk]
    rerun_by(asked, second, harness_result("INCORRECT_NUMERICAL"))
    run.refresh_from_db()
    assert run.evidence == "reported"
    assert "workers disagree: reproduced by 1, not reproduced by 1" in quorum_line(client, run)
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert "signed by worker quorum-a" in page and "signed by worker quorum-b" in page  # every attestation

    (waiting,) = verification.build_queue().quorum  # no third worker is live yet
    assert waiting.run.pk == run.pk and "waits for another worker of cpu" in waiting.holdup
    beat(third)
    (decider,) = [request for request in verification.apply_policy() if request.run_id == run.pk]
    assert sorted(decider.not_by_keys) == sorted([first.key_id, second.key_id])
    rerun_by(decider, third, reproducing(run))
    run.refresh_from_db()
    assert run.evidence == "reproduced"
    assert "reproduced by 2 workers" in quorum_line(client, run)


def test_a_run_reproduced_within_the_drift_is_ranked_by_the_median_of_its_workers_not_the_last_one(
    client: Client, demo: Callable[[str], Run], rerun_by: RerunBy
) -> None:
    """Each worker's latest rerun that reproduced the run counts once: its ranked latency is their median, so
    neither the newest rerun nor one key's repeated reruns move it alone."""
    run = demo(TOP)
    reported = run.latency_ns
    spec = document_value(run.digest)["spec"]
    first, second, third = key("quorum-a"), key("quorum-b"), key("quorum-c")
    rerun_by(request_rerun(run, user=None), first, drifted(spec, reported, 1.3))
    rerun_by(request_rerun(run, user=None, not_by=[]), first, drifted(spec, reported, 1.5))  # replaces a's 1.3
    rerun_by(request_rerun(run, user=None, not_by=[]), second, drifted(spec, reported, 1.6))
    rerun_by(request_rerun(run, user=None, not_by=[]), third, drifted(spec, reported, 1.9))

    run.refresh_from_db()
    assert (run.evidence, run.reported_latency_ns) == ("reproduced", reported)
    assert run.latency_ns == pytest.approx(reported * 1.6)  # the median of 1.5, 1.6 and 1.9, not the newest
    board = {row["runId"]: row for row in client.get(run.group.get_absolute_url() + ".json").json()["runs"]}
    assert board[run.run_id]["latencyNs"] == pytest.approx(reported * 1.6)
    assert "(their median, one rerun per worker)" in visible_text(client.get(run.get_absolute_url()).content)


def test_with_distinct_hosts_two_keys_on_one_host_are_one_worker(
    client: Client, demo: Callable[[str], Run], policy: Any, rerun_by: RerunBy
) -> None:
    policy.VERIFICATION_QUORUM_DISTINCT_HOSTS = True
    run = demo(TOP)
    first, second, third = key("quorum-a"), key("quorum-b"), key("quorum-c")
    rerun_by(request_rerun(run, user=None), first, reproducing(run, host="host-1"))
    beat(second)
    beat(third)
    (asked,) = [request for request in verification.apply_policy() if request.run_id == run.pk]
    rerun_by(asked, second, reproducing(run, host="host-1"))
    assert "reproduced by 1 of 2 workers" in quorum_line(client, run)
    (again,) = [request for request in verification.apply_policy() if request.run_id == run.pk]
    rerun_by(again, third, reproducing(run, host="host-2"))
    assert "reproduced by 2 workers" in quorum_line(client, run)


def test_a_quorum_rerun_that_ends_undecided_is_not_asked_for_again_every_sweep(
    client: Client, demo: Callable[[str], Run], policy: Any, rerun_by: RerunBy
) -> None:
    run = demo(TOP)
    first, second = key("quorum-a"), key("quorum-b")
    rerun_by(request_rerun(run, user=None), first, reproducing(run))
    beat(second)
    (asked,) = [request for request in verification.apply_policy() if request.run_id == run.pk]
    failed = rerun_by(asked, second, None)  # the harness wrote no result: failed, no verdict
    assert (failed.state, failed.verdict) == ("failed", "")
    assert not [request for request in verification.apply_policy() if request.run_id == run.pk]
    (entry,) = client.get("/verification.json").json()["quorum"]
    assert "ended lately without deciding" in entry["waitsBecause"]
