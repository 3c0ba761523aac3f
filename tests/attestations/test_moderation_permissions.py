"""Moderation needs the change permission, and every act is in the admin's history with who and when."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from attestations.models import Attestation, IssueReport
from runs.models import Run
from runs.services import withdraw_run
from tests.pages import visible_text

NOTES = "/admin/attestations/attestation/"
REPORTS = "/admin/attestations/issuereport/"
RUNS = "/admin/runs/run/"


@dataclass(frozen=True)
class Act:
    changelist: str
    action: str
    model: type[Attestation | IssueReport | Run]
    before: dict[str, Any]
    after: dict[str, Any]


ACTS = [
    Act(NOTES, "approve", Attestation, {"status": "pending"}, {"status": "approved"}),
    Act(NOTES, "reject", Attestation, {"status": "pending"}, {"status": "rejected"}),
    Act(REPORTS, "triage", IssueReport, {"status": "open"}, {"status": "triaged"}),
    Act(REPORTS, "resolve", IssueReport, {"status": "open"}, {"status": "resolved"}),
    Act(REPORTS, "dismiss", IssueReport, {"status": "open"}, {"status": "dismissed"}),
    Act(RUNS, "restore", Run, {"withdrawn_reason": "Duplicate."}, {"withdrawn_reason": ""}),
]


def staff(username: str, *codenames: str) -> Client:
    user = User.objects.create_user(username, password="not-used", is_staff=True)
    views = Permission.objects.filter(codename__startswith="view_")
    user.user_permissions.set([*views, *Permission.objects.filter(codename__in=codenames)])
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def viewer(db: None) -> Client:
    return staff("viewer")


@pytest.fixture
def moderator(db: None) -> Client:
    return staff("moderator", "change_attestation", "change_issuereport", "change_run")


def subject(act: Act, run: Run) -> Attestation | IssueReport | Run:
    if act.model is Attestation:
        return Attestation.objects.create(run=run, kind="note", body="a note to decide on")
    if act.model is IssueReport:
        return IssueReport.objects.create(run=run, category="duplicate", body="a report to decide on")
    withdraw_run(run, "Duplicate.")
    return run


def state(obj: Attestation | IssueReport | Run, act: Act) -> dict[str, Any]:
    obj.refresh_from_db()
    return {name: getattr(obj, name) for name in act.before}


@pytest.mark.parametrize("act", ACTS, ids=[act.action for act in ACTS])
def test_a_view_only_moderator_sees_the_queue_but_cannot_act(viewer: Client, run: Run, act: Act) -> None:
    obj = subject(act, run)
    page = viewer.get(act.changelist)
    assert page.status_code == 200
    assert f'value="{act.action}"' not in page.content.decode()

    viewer.post(act.changelist, {"action": act.action, "_selected_action": [obj.pk]})
    assert state(obj, act) == act.before
    assert not LogEntry.objects.exists()


@pytest.mark.parametrize("act", ACTS, ids=[act.action for act in ACTS])
def test_each_action_is_logged_with_who_what_and_when(moderator: Client, run: Run, act: Act) -> None:
    obj = subject(act, run)
    started = timezone.now()
    page = moderator.get(act.changelist)
    assert f'value="{act.action}"' in page.content.decode()

    response = moderator.post(act.changelist, {"action": act.action, "_selected_action": [obj.pk]})
    assert response.status_code == 302
    assert state(obj, act) == act.after
    entry = LogEntry.objects.get()
    assert (entry.user.username, entry.object_id, entry.is_change()) == ("moderator", str(obj.pk), True)
    assert entry.action_time >= started
    assert entry.get_change_message() in {
        f"Status set to {act.after.get('status')} (moderation action).",
        "Restored (moderation action).",
    }


def test_a_view_only_moderator_cannot_edit_or_withdraw_through_the_forms(viewer: Client, run: Run) -> None:
    note = Attestation.objects.create(run=run, kind="note", body="original")
    report = IssueReport.objects.create(run=run, category="other", body="original")
    note_form = {"run": run.pk, "kind": "note", "outcome": "", "body": "edited", "status": "approved"}
    report_form = {"run": run.pk, "category": "other", "body": "edited", "status": "resolved"}
    assert viewer.post(f"{NOTES}{note.pk}/change/", note_form).status_code == 403
    assert viewer.post(f"{REPORTS}{report.pk}/change/", report_form).status_code == 403
    assert viewer.post(f"{RUNS}{run.pk}/change/", {"withdrawn_reason": "Spam."}).status_code == 403
    note.refresh_from_db()
    report.refresh_from_db()
    run.refresh_from_db()
    assert (note.body, note.status, report.status, run.withdrawn_at) == ("original", "pending", "open", None)
    assert not LogEntry.objects.exists()


def test_a_runs_change_page_shows_its_whole_moderation_history(moderator: Client, run: Run) -> None:
    note = Attestation.objects.create(run=run, kind="note", body="same figures here")
    report = IssueReport.objects.create(run=run, category="duplicate", body="twice on the board")
    elsewhere = IssueReport.objects.create(
        run=Run.objects.exclude(pk=run.pk).first(), category="other", body="another run"
    )
    moderator.post(NOTES, {"action": "approve", "_selected_action": [note.pk]})
    moderator.post(REPORTS, {"action": "triage", "_selected_action": [report.pk, elsewhere.pk]})
    form = {"run": run.pk, "category": "duplicate", "body": "twice on the board", "status": "resolved"}
    assert moderator.post(f"{REPORTS}{report.pk}/change/", form).status_code == 302
    assert moderator.post(f"{RUNS}{run.pk}/change/", {"withdrawn_reason": "Submitted twice."}).status_code == 302
    assert moderator.post(f"{RUNS}{run.pk}/change/", {"withdrawn_reason": ""}).status_code == 302

    page = visible_text(moderator.get(f"{RUNS}{run.pk}/change/").content)
    history = page.split("Moderation history", 1)[1]
    acts = [
        "Restored (edit form).",
        "Withdrawn: Submitted twice.",
        "Status triaged → resolved (edit form); changed Status.",
        "Status set to triaged (moderation action).",
        "Status set to approved (moderation action).",
    ]
    positions = [history.find(act) for act in acts]
    assert -1 not in positions, history
    assert positions == sorted(positions)  # newest first
    assert "moderator" in history and str(timezone.now().year) in history
    assert history.count("Status set to triaged") == 1  # the other run's report is not this run's history
