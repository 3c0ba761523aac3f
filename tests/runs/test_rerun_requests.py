"""Asking for reruns: who may, what is refused, what is logged, and what the sweep does without a worker."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from runs.models import Run
from tests.conftest import SEED_MANIFEST, ImportRuns
from tests.pages import visible_text
from tests.runs.conftest import use_broker
from verification.models import RerunRequest, RerunWorker
from verification.reruns import RerunRefusedError, beat_worker, request_rerun, sweep_reruns

pytestmark = pytest.mark.usefixtures("memory_broker")
UNREACHABLE_BROKER = "redis://127.0.0.1:9/0"  # the discard port: nothing listens there


def test_a_moderator_queues_a_rerun_from_the_run_page(
    client: Client, moderator: User, demo: Callable[[str], Run], django_capture_on_commit_callbacks: Any
) -> None:
    run = demo("rmsnorm-vectorised")
    client.force_login(moderator)
    page = client.get(run.get_absolute_url()).content.decode()
    assert "Request a controlled rerun" in page
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/runs/{run.run_id}/rerun", {"reason": "check the claim"})
    response = client.get(run.get_absolute_url())
    rerun = RerunRequest.objects.get(run=run)
    assert (rerun.state, rerun.hardware, rerun.reason, rerun.requested_by) == (
        "queued",
        "cpu",
        "check the claim",
        moderator,
    )
    assert rerun.sent_at is not None
    text = visible_text(response.content)
    # One notice at a time: where the rerun stands says more than what was just done.
    assert f"Rerun #{rerun.pk} is queued for a cpu worker" in text
    assert f"Rerun #{rerun.pk} queued on reruns.cpu" not in text


def test_anonymous_visitors_and_staff_without_the_permission_never_see_the_button(
    client: Client, staff_without_rerun: User, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-vectorised")
    assert "Request a controlled rerun" not in client.get(run.get_absolute_url()).content.decode()
    client.force_login(staff_without_rerun)
    assert "Request a controlled rerun" not in client.get(run.get_absolute_url()).content.decode()


def test_posting_without_the_permission_is_refused(
    client: Client, staff_without_rerun: User, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-vectorised")
    assert client.post(f"/runs/{run.run_id}/rerun", {}).status_code == 403
    client.force_login(staff_without_rerun)
    assert client.post(f"/runs/{run.run_id}/rerun", {}).status_code == 403
    assert not RerunRequest.objects.exists()


def test_the_admin_action_needs_the_rerun_permission(
    client: Client, staff_without_rerun: User, moderator: User, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-vectorised")
    action = {"action": "request_reruns", "_selected_action": [run.pk]}
    client.force_login(staff_without_rerun)
    assert "request_reruns" not in client.get("/admin/runs/run/").content.decode()
    client.post("/admin/runs/run/", action)
    assert not RerunRequest.objects.exists()
    client.force_login(moderator)
    response = client.post("/admin/runs/run/", action, follow=True)
    assert response.status_code == 200
    assert RerunRequest.objects.get(run=run).requested_by == moderator


def test_every_request_is_in_the_audit_log(client: Client, moderator: User, demo: Callable[[str], Run]) -> None:
    run = demo("rmsnorm-vectorised")
    client.force_login(moderator)
    client.post(f"/runs/{run.run_id}/rerun", {"reason": "audit me"})
    rerun = RerunRequest.objects.get()
    entry = LogEntry.objects.get(object_id=str(run.pk))
    assert entry.user == moderator
    assert f"Requested rerun #{rerun.pk} on cpu: audit me" in entry.get_change_message()
    history = client.get(f"/admin/runs/run/{run.pk}/history/").content.decode()
    assert f"Requested rerun #{rerun.pk}" in history


def test_a_run_without_solution_sources_is_refused_with_the_reason(
    client: Client, moderator: User, import_runs: ImportRuns
) -> None:
    import_runs(SEED_MANIFEST, redigest=True)
    run = Run.objects.get()
    client.force_login(moderator)
    response = client.post(f"/runs/{run.run_id}/rerun", {}, follow=True)
    assert "Not queued: this run published no solution sources" in visible_text(response.content)
    assert not RerunRequest.objects.exists()
    with pytest.raises(CommandError, match="published no solution sources"):
        call_command("rerun", run.run_id, stdout=io.StringIO())


def test_a_second_request_for_a_run_is_refused_not_doubled(moderator: User, demo: Callable[[str], Run]) -> None:
    run = demo("rmsnorm-vectorised")
    request_rerun(run, user=moderator)
    with pytest.raises(RerunRefusedError, match="already queued or running"):
        request_rerun(run, user=moderator)
    RerunRequest.objects.update(state="running")
    with pytest.raises(RerunRefusedError, match="already queued or running"):
        request_rerun(run, user=moderator)
    assert RerunRequest.objects.count() == 1


def test_the_command_queues_on_the_hardware_asked_for(demo: Callable[[str], Run]) -> None:
    run = demo("rmsnorm-vectorised")
    out = io.StringIO()
    call_command("rerun", run.run_id, "--hardware", "nvidia-h100", stdout=out)
    rerun = RerunRequest.objects.get()
    assert out.getvalue().strip() == (
        f"run {run.run_id}: Rerun #{rerun.pk} queued on reruns.nvidia-h100. "
        "No nvidia-h100 worker is live: it waits until one starts."
    )
    with pytest.raises(CommandError, match="no run 'nope'"):
        call_command("rerun", "nope", stdout=io.StringIO())


def test_an_unknown_hardware_class_is_refused_with_the_list_of_classes(
    client: Client, moderator: User, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-vectorised")
    client.force_login(moderator)
    response = client.post(f"/runs/{run.run_id}/rerun", {"hardware": "nvidia-h1OO"}, follow=True)
    text = visible_text(response.content)
    assert "Not queued: 'nvidia-h1OO' is not a hardware class; the classes are cpu, nvidia-gb200" in text
    with pytest.raises(CommandError, match="'nvidia-h1OO' is not a hardware class; the classes are cpu, "):
        call_command("rerun", run.run_id, "--hardware", "nvidia-h1OO", stdout=io.StringIO())
    with pytest.raises(RerunRefusedError, match="the classes are"):
        request_rerun(run, user=moderator, hardware="nvidia-h1OO")
    assert not RerunRequest.objects.exists()
    # Nothing waits forever in its place: a rerun on a real class is still taken.
    client.post(f"/runs/{run.run_id}/rerun", {"hardware": "cpu"})
    assert RerunRequest.objects.get().hardware == "cpu"


def test_a_request_for_a_class_without_a_live_worker_says_it_will_wait(
    client: Client, moderator: User, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-vectorised")
    client.force_login(moderator)
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert "No rerun worker is live." in page
    assert "No cpu worker is live: a rerun requested on cpu waits until one starts." in page
    response = client.post(f"/runs/{run.run_id}/rerun", {}, follow=True)
    assert "No cpu worker is live: it waits until one starts." in visible_text(response.content)
    beat_worker("gpu-host@1", ["nvidia-h100"])
    beat_worker("cpu-host@1", ["cpu"])
    RerunWorker.objects.filter(name="gpu-host@1").update(seen_at=timezone.now() - timedelta(hours=1))
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert "Live rerun workers: cpu (1)." in page
    assert "No cpu worker is live" not in page
    admin = visible_text(client.get("/admin/verification/rerunworker/").content)
    assert "Classes with a live worker: cpu (1). A rerun requested on any other waits: nvidia-gb200" in admin


def test_with_the_broker_down_the_request_waits_and_the_sweep_sends_it(
    client: Client, moderator: User, demo: Callable[[str], Run], django_capture_on_commit_callbacks: Any
) -> None:
    run = demo("rmsnorm-vectorised")
    use_broker(UNREACHABLE_BROKER)
    client.force_login(moderator)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/runs/{run.run_id}/rerun", {})
    rerun = RerunRequest.objects.get()
    assert (rerun.state, rerun.sent_at) == ("queued", None)
    assert rerun.send_error.startswith("not sent:")
    assert "is waiting: it is stored" in visible_text(client.get(run.get_absolute_url()).content)
    use_broker("memory://")
    assert sweep_reruns().resent == 1
    rerun.refresh_from_db()
    assert rerun.sent_at is not None
    assert sweep_reruns().resent == 0  # sent a moment ago: not again until RERUN_RESEND_AFTER_SECONDS


def test_the_sweep_retries_a_silent_worker_then_gives_up(
    settings: object, moderator: User, demo: Callable[[str], Run]
) -> None:
    rerun = request_rerun(demo("rmsnorm-vectorised"), user=moderator)
    long_ago = timezone.now() - timedelta(hours=1)
    RerunRequest.objects.filter(pk=rerun.pk).update(state="running", attempts=1, heartbeat_at=long_ago, worker="w1")
    assert sweep_reruns().retried == 1
    rerun.refresh_from_db()
    assert (rerun.state, rerun.attempts) == ("queued", 1)
    RerunRequest.objects.filter(pk=rerun.pk).update(state="running", attempts=3, heartbeat_at=long_ago, worker="w3")
    assert sweep_reruns().failed == 1
    rerun.refresh_from_db()
    assert rerun.state == "failed"
    assert rerun.failure_status == "WORKER_LOST"
    assert "worker w3 stopped heartbeating; gave up after 3 attempts" in rerun.failure_reason


def test_a_live_worker_is_left_alone(moderator: User, demo: Callable[[str], Run]) -> None:
    rerun = request_rerun(demo("rmsnorm-vectorised"), user=moderator)
    RerunRequest.objects.filter(pk=rerun.pk).update(state="running", attempts=1, heartbeat_at=timezone.now())
    assert sweep_reruns().retried == 0
    rerun.refresh_from_db()
    assert rerun.state == "running"


def test_after_the_site_was_away_the_sweep_takes_nothing_back_until_beats_could_arrive(
    moderator: User, demo: Callable[[str], Run]
) -> None:
    """A web tier that stalled or restarted heard no beat meanwhile: they may still wait on the results queue."""
    from django.core.cache import cache

    from verification.reruns import SWEPT_AT

    rerun = request_rerun(demo("rmsnorm-vectorised"), user=moderator)
    long_ago = timezone.now() - timedelta(hours=1)
    RerunRequest.objects.filter(pk=rerun.pk).update(state="running", attempts=1, heartbeat_at=long_ago, worker="w1")
    cache.set(SWEPT_AT, long_ago.timestamp())  # as the sweep keeps it: JSON (web/json_cache.py)
    assert sweep_reruns().retried == 0
    rerun.refresh_from_db()
    assert rerun.state == "running"
    assert sweep_reruns().retried == 1  # a sweep later, the silence is the worker's
