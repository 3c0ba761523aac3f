"""The verification policy (verification/policy.py): what the sweep queues by itself, in what order, within what
budget; and /verification and the run page, which say where each run stands."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from harness import harness_digest
from runs.models import Run, RunVersion
from tests.conftest import ImportRuns
from tests.pages import visible_text
from tests.runs.conftest import DEMO
from verification import policy as verification
from verification import tasks
from verification.models import RerunRequest, VerificationPause
from verification.reruns import SYSTEM_USERNAME
from verification.worker_keys import create_worker_key, revoke_worker_key

pytestmark = pytest.mark.usefixtures("memory_broker")
# The demo's runs with a latency, by comparison group: each group's #1 first, then its rank 2, then 3.
HOLDERS = {"rmsnorm-row-loop", "softmax-exp2", "swiglu-in-place", "gemm-torch-mm"}
SECONDS = {"rmsnorm-vectorised", "softmax-fused", "swiglu-per-token", "gemm-row-loop"}
FAILED = {"rmsnorm-eps-1e-2", "swiglu-gelu", "gemm-bf16"}  # no latency: no rank


@pytest.fixture
def policy(settings: Any, db: None) -> Any:
    """The policy on, and a worker of the demo's class (cpu) registered here."""
    settings.VERIFICATION_POLICY = True
    create_worker_key("tests-cpu", ["cpu"])
    return settings


def sweep() -> dict[str, int]:
    """The periodic task as beat runs it (its sending is tested in test_rerun_requests.py)."""
    return tasks.sweep_reruns()


def queued_names() -> list[str]:
    return list(RerunRequest.objects.order_by("id").values_list("run__implementation_name", flat=True))


def waiting_names() -> list[str]:
    return [entry.run.implementation_name for entry in verification.build_queue().waiting]


def make_older(run: Run, days: int) -> None:
    then = timezone.now() - timedelta(days=days)
    RunVersion.objects.filter(run=run).update(imported_at=then)
    Run.objects.filter(pk=run.pk).update(published_at=then)


def finished_rerun(run: Run, *, seconds: float = 10.0, verdict: str = "reproduced", **fields: Any) -> RerunRequest:
    defaults = {"state": "succeeded", "finished_at": timezone.now(), "harness_seconds": seconds, "verdict": verdict}
    return RerunRequest.objects.create(run=run, run_digest=run.digest, hardware="cpu", **(defaults | fields))


def test_a_would_be_number_one_goes_first_then_rank_then_age(policy: Any, demo: Callable[[str], Run]) -> None:
    make_older(demo("gemm-torch-mm"), 3)
    make_older(demo("swiglu-gelu"), 2)
    names = waiting_names()
    assert set(names[:4]) == HOLDERS and names[0] == "gemm-torch-mm"  # ranks tie at 1: the oldest first
    assert set(names[4:8]) == SECONDS
    assert names[8] == "softmax-row-loop"  # rank 3
    assert set(names[9:]) == FAILED and names[9] == "swiglu-gelu"
    reasons = [entry.because() for entry in verification.build_queue().waiting]
    assert reasons[0] == "holds #1 of gemm_n256_k512 on CPU"
    assert reasons[4].startswith("rank 2 of ")
    assert reasons[9] == "imported 2 days ago"


def test_the_sweep_queues_in_order_one_at_a_time_and_twice_queues_nothing_twice(
    policy: Any, demo: Callable[[str], Run]
) -> None:
    make_older(demo("softmax-exp2"), 5)
    assert sweep()["verifying"] == 1
    assert sweep()["verifying"] == 0  # one in flight already: the default keeps to one at a time
    (rerun,) = RerunRequest.objects.all()
    assert (rerun.run.implementation_name, rerun.hardware, rerun.requested_by.username) == (  # type: ignore[union-attr]
        "softmax-exp2",
        "cpu",
        SYSTEM_USERNAME,
    )
    assert rerun.reason == "verification policy: holds #1 of softmax_h8 on CPU"
    policy.VERIFICATION_MAX_IN_FLIGHT = 3
    assert sweep()["verifying"] == 2
    assert sweep()["verifying"] == 0
    assert len(queued_names()) == len(set(queued_names())) == 3
    assert set(queued_names()) <= HOLDERS


def test_the_budget_stops_queueing_when_spent_and_resumes_the_next_day(policy: Any, demo: Callable[[str], Run]) -> None:
    policy.VERIFICATION_BUDGET_SECONDS_PER_DAY = 100
    finished_rerun(demo("softmax-row-loop"), seconds=100)
    assert verification.apply_policy() == []
    state = verification.build_queue().classes["cpu"]
    assert (state.spent_seconds, state.left_seconds, state.may_queue) == (100, 0, False)
    assert state.holdup() == "today's budget on cpu is spent; it resumes tomorrow"
    tomorrow = timezone.now() + timedelta(days=1)
    (queued,) = verification.apply_policy(tomorrow)
    assert queued.run.implementation_name in HOLDERS


def test_the_estimate_of_reruns_in_flight_counts_against_the_budget(policy: Any, demo: Callable[[str], Run]) -> None:
    policy.VERIFICATION_BUDGET_SECONDS_PER_DAY = 30
    policy.VERIFICATION_MAX_IN_FLIGHT = 5
    finished_rerun(demo("softmax-row-loop"), seconds=20)  # today: 20 s spent, and 20 s the estimate of one more
    assert len(verification.apply_policy()) == 1  # 20 spent < 30: one queued, then 40 committed
    assert verification.apply_policy() == []


def test_a_paused_class_queues_nothing_until_resumed(
    policy: Any, demo: Callable[[str], Run], client: Client, admin_user: User
) -> None:
    client.force_login(admin_user)
    client.post("/admin/verification/verificationpause/add/", {"hardware_class": "cpu", "reason": "maintenance"})
    pause = VerificationPause.objects.get()
    assert (pause.hardware_class, pause.paused_by) == ("cpu", admin_user)
    assert sweep()["verifying"] == 0
    client.logout()
    run = demo("softmax-exp2")
    assert "but a moderator paused the policy on cpu" in visible_text(client.get(run.get_absolute_url()).content)
    assert json.loads(client.get("/verification.json").content)["classes"][0]["paused"] is True
    pause.delete()
    assert sweep()["verifying"] == 1


def test_a_run_without_sources_or_reference_is_never_queued_and_says_why(policy: Any, run: Run, client: Client) -> None:
    create_worker_key("tests-class", [verification.run_hardware_class(run)])
    assert sweep()["verifying"] == 0
    assert not RerunRequest.objects.exists()
    said = verification.run_verification(run)
    assert said.state == "not-runnable"
    assert "no solution sources" in said.sentence or "no reference" in said.sentence
    twin = json.loads(client.get(f"/runs/{run.run_id}.json").content)
    assert twin["verification"]["state"] == "not-runnable"
    assert said.sentence in visible_text(client.get(run.get_absolute_url()).content)


def test_a_class_without_a_registered_worker_queues_nothing(
    settings: Any, demo: Callable[[str], Run], client: Client
) -> None:
    settings.VERIFICATION_POLICY = True
    create_worker_key("tests-cpu", ["cpu"])
    revoke_worker_key("tests-cpu")
    assert sweep()["verifying"] == 0
    listed = json.loads(client.get("/verification.json").content)
    assert listed["noRegisteredWorker"] == [{"hardwareClass": "cpu", "runs": 12}]
    assert listed["waiting"]["runs"] == []
    said = verification.run_verification(demo("softmax-exp2"))
    assert (said.state, said.sentence) == (
        "no-worker",
        "It won't be verified yet: no worker of cpu is registered here.",
    )


def test_a_verified_run_is_not_queued_again_but_its_new_version_is(
    policy: Any, demo: Callable[[str], Run], import_runs: ImportRuns, tmp_path: Path
) -> None:
    run = demo("softmax-exp2")
    finished_rerun(run, finished_at=timezone.now() - timedelta(days=3))
    assert "softmax-exp2" not in waiting_names()
    assert verification.run_verification(run).state == "verified"
    # The source publishes the run again, with another figure: a new version of the same run.
    for line in (DEMO / "runs" / "reported.jsonl").read_text().splitlines():
        manifest = json.loads(line)
        if manifest["run"]["spec"]["sourceNative"]["externalId"].endswith("/softmax-exp2"):
            break
    manifest["run"]["spec"]["timing"]["latencyNs"]["median"] *= 0.9
    (tmp_path / "again.json").write_text(json.dumps(manifest))
    import_runs(tmp_path / "again.json")
    run.refresh_from_db()
    assert run.version_count == 2
    assert waiting_names()[3] == "softmax-exp2"  # #1 of its group still, and the newest version of the four
    assert verification.run_verification(run).state == "waiting"


def test_a_top_run_decided_by_an_earlier_harness_is_verified_again_and_says_why(
    policy: Any, demo: Callable[[str], Run], client: Client
) -> None:
    """When the harness changes, the reruns that decide a group's top ranks are run again (within the budget): a
    #1 decided by another harness version waits again; one decided by this site's harness, or a run below the
    top ranks decided by an earlier one, does not."""
    earlier = {"harness_digest": "sha256:" + "ab" * 32, "harness_version": "0.2.0", "finished_at": timezone.now()}
    holder, second, third = demo("softmax-exp2"), demo("softmax-fused"), demo("softmax-row-loop")
    for run in (holder, second, third):
        finished_rerun(run, **earlier | {"finished_at": timezone.now() - timedelta(days=2)})
    finished_rerun(second, harness_digest=harness_digest(), finished_at=timezone.now() - timedelta(days=2))
    policy.VERIFICATION_RECHECK_RANKS = 2

    waiting = {entry.run.implementation_name: entry.because() for entry in verification.build_queue().waiting}

    assert waiting["softmax-exp2"] == "holds #1 of softmax_h8 on CPU; its verdict came from an earlier harness"
    assert "softmax-fused" not in waiting  # decided by this harness too
    assert "softmax-row-loop" not in waiting  # rank 3: below the top ranks rechecked
    assert "Waiting for verification" in visible_text(client.get(holder.get_absolute_url()).content)
    assert "A rerun on cpu has decided" in visible_text(client.get(third.get_absolute_url()).content)


def test_an_inconclusive_rerun_is_tried_again_a_day_later(policy: Any, demo: Callable[[str], Run]) -> None:
    run = demo("softmax-exp2")
    finished_rerun(run, verdict="")
    assert "softmax-exp2" not in waiting_names()
    assert verification.run_verification(run).state == "tried"
    RerunRequest.objects.update(finished_at=timezone.now() - timedelta(days=2))
    assert "softmax-exp2" in waiting_names()


def test_the_verification_page_and_its_json_show_the_order_the_budget_and_what_ran(
    policy: Any, demo: Callable[[str], Run], client: Client
) -> None:
    done = finished_rerun(demo("softmax-row-loop"), seconds=42)
    sweep()
    listed = json.loads(client.get("/verification.json").content)
    waiting = listed["waiting"]
    assert waiting["count"] == 10  # 12 runs, one verified, one queued
    assert [entry["position"] for entry in waiting["runs"]] == list(range(1, 11))
    assert waiting["runs"][0]["wouldTakeFirst"] is True and waiting["runs"][0]["rank"] == 1
    assert waiting["runs"][-1]["rank"] is None and waiting["runs"][-1]["reason"].startswith("imported ")
    (cpu,) = listed["classes"]
    assert (cpu["hardwareClass"], cpu["spentSeconds"], cpu["inFlight"], cpu["paused"]) == ("cpu", 42, 1, False)
    assert cpu["leftSeconds"] == 3600 - 42 - 42  # one in flight, estimated at the class's average
    assert listed["ranToday"][0] | {"finishedAt": None} == {
        "rerun": done.pk,
        "runId": done.run.run_id,
        "url": done.run.get_absolute_url(),
        "hardwareClass": "cpu",
        "state": "succeeded",
        "verdict": "reproduced",
        "verdictLabel": "Reproduced",
        "harnessSeconds": 42,
        "finishedAt": None,
        "byPolicy": False,
    }
    text = visible_text(client.get("/verification").content)
    first = waiting["runs"][0]
    assert f"1 {first['runId']}" in text and first["reason"] in text
    assert "Reproduced" in text and "3516" in text
    assert "verification queue" in visible_text(client.get("/").content)  # linked from every page's footer


def test_the_waiting_list_is_paginated(policy: Any, demo: Callable[[str], Run], client: Client) -> None:
    from verification import views as verification_views

    first = verification_views.waiting_page(verification.build_queue(), None, size=5)
    second = verification_views.waiting_page(verification.build_queue(), first.next_cursor, size=5)
    assert [entry.position for entry in second.rows] == [6, 7, 8, 9, 10]
    page = json.loads(client.get("/verification.json").content)["waiting"]
    assert (page["count"], page["first"], page["last"], page["next"]) == (12, 1, 12, None)


def test_the_run_page_shows_its_place_and_follows_the_queue(
    policy: Any, demo: Callable[[str], Run], client: Client
) -> None:
    run = demo("softmax-fused")
    place = verification.build_queue().find(run)
    assert place is not None
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert f"Waiting for verification: {verification.ordinal(place.position)} in the queue of cpu." in page
    twin = json.loads(client.get(f"/runs/{run.run_id}.json").content)
    assert twin["verification"] == {
        "state": "waiting",
        "hardwareClass": "cpu",
        "position": place.position,
        "paused": False,
        "reason": f"Waiting for verification: {verification.ordinal(place.position)} in the queue of cpu.",
    }
    assert {"evidence", "reruns"} <= set(twin)
    sweep()  # the first one is queued: every place moves up, and the cached pages with it
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert f"{verification.ordinal(place.position - 1)} in the queue of cpu" in page
    assert json.loads(client.get(f"/runs/{run.run_id}.json").content)["verification"]["position"] == place.position - 1


def test_with_the_policy_off_nothing_is_queued(demo: Callable[[str], Run], client: Client) -> None:
    create_worker_key("tests-cpu", ["cpu"])
    assert sweep()["verifying"] == 0
    run = demo("softmax-exp2")
    assert verification.run_verification(run).state == "off"
    assert json.loads(client.get("/verification.json").content)["policy"] is False


@pytest.mark.parametrize(
    ("number", "said"), [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (22, "22nd")]
)
def test_ordinals(number: int, said: str) -> None:
    assert verification.ordinal(number) == said
