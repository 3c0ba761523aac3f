"""The moderation queue in the Django admin, and what moderation must never touch."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from attestations.models import Attestation, IssueReport
from runs.models import Run
from tests.pages import visible_text

CHANGELIST = "/admin/attestations/attestation/"
REPORTS = "/admin/attestations/issuereport/"


def pending(run: Run, **fields: Any) -> Attestation:
    values: dict[str, Any] = {"kind": "reproduction", "outcome": "reproduced", "gpu": "NVIDIA H100", "body": "ok"}
    return Attestation.objects.create(run=run, **(values | fields))


def act(client: Client, url: str, action: str, *objects: Attestation | IssueReport) -> None:
    response = client.post(url, {"action": action, "_selected_action": [obj.pk for obj in objects]})
    assert response.status_code == 302


def test_the_queue_filters_searches_and_links_to_the_run(admin_client: Client, run: Run) -> None:
    other = Run.objects.exclude(pk=run.pk).first()
    assert other is not None
    pending(run, body="needle in the haystack")
    pending(other, kind="note", outcome="", status="approved")

    page = admin_client.get(CHANGELIST).content.decode()
    assert f'<a href="{run.get_absolute_url()}">{run.run_id}</a>' in page
    for choice in ("?status__exact=pending", "?kind__exact=note", "?outcome__exact=not_reproduced"):
        assert choice in page

    assert "1 result" in visible_text(admin_client.get(CHANGELIST, {"status__exact": "pending"}).content)
    by_run = visible_text(admin_client.get(CHANGELIST, {"q": other.run_id}).content)
    assert other.run_id in by_run and run.run_id not in by_run
    assert "1 result" in visible_text(admin_client.get(CHANGELIST, {"q": "haystack"}).content)


def test_approve_and_reject_record_who_and_when(admin_client: Client, admin_user: User, run: Run) -> None:
    keep, drop = pending(run, body="keep"), pending(run, body="drop")
    act(admin_client, CHANGELIST, "approve", keep)
    act(admin_client, CHANGELIST, "reject", drop)
    keep.refresh_from_db()
    drop.refresh_from_db()
    assert (keep.status, keep.moderated_by) == ("approved", admin_user)
    assert (drop.status, drop.moderated_by) == ("rejected", admin_user)
    assert keep.moderated_at is not None and drop.moderated_at is not None

    page = Client().get(run.get_absolute_url()).content.decode()
    assert "keep" in visible_text(page.split('id="notes"', 1)[1].split("</section>", 1)[0])
    assert ">drop<" not in page


def test_approving_twice_keeps_the_first_decision(admin_client: Client, run: Run) -> None:
    attestation = pending(run)
    act(admin_client, CHANGELIST, "approve", attestation)
    attestation.refresh_from_db()
    first = attestation.moderated_at
    response = admin_client.post(CHANGELIST, {"action": "approve", "_selected_action": [attestation.pk]}, follow=True)
    assert "0 approved (1 already approved)." in visible_text(response.content)
    attestation.refresh_from_db()
    assert attestation.moderated_at == first


def test_changing_the_status_in_the_form_records_the_moderator(
    admin_client: Client, admin_user: User, run: Run
) -> None:
    attestation = pending(run)
    url = f"{CHANGELIST}{attestation.pk}/change/"
    form = {
        "run": run.pk,
        "kind": "reproduction",
        "outcome": "reproduced",
        "gpu": "NVIDIA H100",
        "body": "ok",
        "status": "approved",
    }
    assert admin_client.post(url, form).status_code == 302
    attestation.refresh_from_db()
    assert (attestation.status, attestation.moderated_by) == ("approved", admin_user)


def test_report_actions(admin_client: Client, admin_user: User, run: Run) -> None:
    reports = [IssueReport.objects.create(run=run, category="duplicate", body=f"report {i}") for i in range(3)]
    page = admin_client.get(REPORTS).content.decode()
    assert f'<a href="{run.get_absolute_url()}">{run.run_id}</a>' in page
    assert "?category__exact=license" in page and "?status__exact=open" in page
    for action, report in zip(("triage", "resolve", "dismiss"), reports, strict=True):
        act(admin_client, REPORTS, action, report)
    statuses = [(r.status, r.moderated_by) for r in IssueReport.objects.order_by("body")]
    assert statuses == [("triaged", admin_user), ("resolved", admin_user), ("dismissed", admin_user)]
    assert "1 result" in visible_text(admin_client.get(REPORTS, {"q": '"report 1"'}).content)


def test_only_staff_reach_the_queue(client: Client, run: Run) -> None:
    pending(run)
    response = client.get(CHANGELIST)
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def group_order(run: Run) -> list[str]:
    """The run's comparison group in rank order, as the leaderboard ranks it."""
    rankable = Run.objects.rankable().filter(group=run.group)
    by_latency = list(rankable.order_by("latency_ns", "id").values_list("run_id", flat=True))
    by_source = list(rankable.exclude(source_rank=None).order_by("source_rank").values_list("run_id", flat=True))
    return by_latency + ["|"] + by_source


def test_approving_a_failed_reproduction_leaves_evidence_and_rank_alone(admin_client: Client, run: Run) -> None:
    row_before = Run.objects.filter(pk=run.pk).values().get()
    order_before = group_order(run)
    assert row_before["evidence"] == Run.Evidence.REPORTED

    failures = [pending(run, outcome="not_reproduced", measured_latency_ns=9e9) for _ in range(3)]
    act(admin_client, CHANGELIST, "approve", *failures)

    assert Attestation.objects.approved().filter(run=run).count() == 3
    # Only the count of what its page lists moves (runs.figures); nothing that ranks or judges the run.
    assert Run.objects.filter(pk=run.pk).values().get() == row_before | {"note_count": 3}
    assert group_order(run) == order_before
