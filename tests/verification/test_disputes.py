"""Disputes (verification/disputes.py): a report escalated to a rerun, in one step, by whom may; its outcome
follows from the rerun; the verification policy escalates a new report itself, within its budget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import AnonymousUser, Permission, User
from django.test import Client
from django.utils import timezone

from attestations.models import DisputeOutcome, IssueReport
from runs.models import Run
from runs.services import withdraw_run
from tests.attestations.form_data import report_data
from tests.conftest import ImportRuns
from tests.pages import visible_text
from tests.runs.conftest import DEMO, memory_broker  # noqa: F401  (a fixture)
from verification.disputes import DisputeRefusedError, escalate, outcome_of
from verification.models import RerunRequest
from verification.reruns import SYSTEM_USERNAME, cancel_rerun, fail_queued, rerun_ended
from verification.worker_keys import create_worker_key

pytestmark = pytest.mark.usefixtures("memory_broker")
REPORTS = "/admin/attestations/issuereport/"
ACTION = "escalate_to_dispute"


@pytest.mark.parametrize(
    ("state", "verdict", "outcome"),
    [
        ("queued", "", None),
        ("running", "", None),
        ("succeeded", "not_reproduced", DisputeOutcome.UPHELD),
        ("failed", "not_reproduced", DisputeOutcome.UPHELD),  # a correctness failure that is the kernel's
        ("succeeded", "reproduced", DisputeOutcome.REJECTED),
        ("succeeded", "", DisputeOutcome.UNDECIDED),  # inconclusive after its attempts
        ("failed", "", DisputeOutcome.UNDECIDED),  # the evaluation itself failed
        ("cancelled", "", DisputeOutcome.UNDECIDED),
    ],
)
def test_the_outcome_follows_from_the_rerun(state: str, verdict: str, outcome: DisputeOutcome | None) -> None:
    assert outcome_of(RerunRequest(state=state, verdict=verdict)) == outcome


def staff(username: str, *codenames: str) -> tuple[User, Client]:
    user = User.objects.create_user(username, password="not-used", is_staff=True)
    views = Permission.objects.filter(codename__startswith="view_")
    user.user_permissions.set([*views, *Permission.objects.filter(codename__in=codenames)])
    client = Client()
    client.force_login(user)
    return user, client


@pytest.fixture
def moderator(db: None) -> tuple[User, Client]:
    return staff("moderator", "change_issuereport", "request_rerun")


@pytest.fixture
def demo(import_runs: ImportRuns) -> Callable[[str], Run]:
    import_runs(DEMO)
    return lambda name: Run.objects.get(source="kernelindex", implementation_name=name, external_id__startswith="demo")


def report_on(run: Run, category: str = "wrong_numbers", body: str = "The latency is 20 times too low.") -> IssueReport:
    return IssueReport.objects.create(run=run, category=category, body=body, contact="me@example.org")


def escalate_in_admin(client: Client, *reports: IssueReport) -> Any:
    data = {"action": ACTION, "_selected_action": [str(report.pk) for report in reports]}
    return client.post(REPORTS, data, follow=True)


def test_a_moderator_escalates_a_report_in_one_step_and_it_is_an_open_dispute(
    moderator: tuple[User, Client], demo: Callable[[str], Run], django_capture_on_commit_callbacks: Any
) -> None:
    user, client = moderator
    run = demo("rmsnorm-row-loop")
    report = report_on(run)
    with django_capture_on_commit_callbacks(execute=True):
        page = escalate_in_admin(client, report)
    report.refresh_from_db()
    rerun = report.rerun
    assert rerun is not None and rerun.run == run and rerun.state == "queued" and rerun.requested_by == user
    assert f"Report #{report.pk} on run {run.run_id} is a dispute, answered by rerun #{rerun.pk}." in visible_text(
        page.content
    )
    assert (report.status, report.dispute_outcome, report.dispute_closed_at) == ("triaged", "", None)
    assert report.escalated_at is not None
    assert LogEntry.objects.filter(object_id=str(report.pk), change_message__contains="Escalated").exists()
    listed = Client().get("/disputes.json").json()["disputes"]
    assert [(row["report"], row["state"], row["rerun"]["id"]) for row in listed] == [(report.pk, "open", rerun.pk)]


def test_two_reports_of_one_run_share_the_rerun_already_waiting(
    moderator: tuple[User, Client], demo: Callable[[str], Run]
) -> None:
    user, _ = moderator
    run = demo("rmsnorm-row-loop")
    first, second = report_on(run), report_on(run, "broken_correctness")
    assert escalate(first, user) == escalate(second, user)
    assert RerunRequest.objects.filter(run=run).count() == 1
    with pytest.raises(DisputeRefusedError, match="already a dispute, waiting on rerun"):
        escalate(first, user)


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("no sources", "this run published no solution sources, so there is nothing to rerun"),
        ("withdrawn", "this run is withdrawn"),
        ("duplicate", "only a report of wrong numbers or broken correctness can be answered by a rerun"),
    ],
)
def test_a_report_that_cannot_be_answered_by_a_rerun_says_why(
    moderator: tuple[User, Client], demo: Callable[[str], Run], run: Run, case: str, said: str
) -> None:
    _, client = moderator
    if case == "no sources":
        report = report_on(run)  # a SOL-ExecBench submission: its kernel's sources were never published
    elif case == "withdrawn":
        withdrawn = demo("rmsnorm-row-loop")
        withdraw_run(withdrawn, "Duplicate.")
        report = report_on(withdrawn)
    else:
        report = report_on(demo("rmsnorm-row-loop"), "duplicate")
    page = visible_text(escalate_in_admin(client, report).content)
    assert f"Report #{report.pk} on run {report.run.run_id} not escalated: {said}." in page
    report.refresh_from_db()
    assert (report.rerun, report.escalated_at, report.status) == (None, None, "open")
    assert not RerunRequest.objects.exists()


def test_a_moderator_without_the_rerun_permission_cannot_escalate(demo: Callable[[str], Run]) -> None:
    user, client = staff("triager", "change_issuereport")
    report = report_on(demo("rmsnorm-row-loop"))
    assert ACTION not in client.get(REPORTS).content.decode()  # not offered
    escalate_in_admin(client, report)  # and refused when posted anyway
    with pytest.raises(DisputeRefusedError, match="needs the permissions"):
        escalate(report, user)
    rerun_only, _ = staff("rerunner", "request_rerun")  # nor with the rerun permission alone
    with pytest.raises(DisputeRefusedError, match="needs the permissions"):
        escalate(report, rerun_only)
    report.refresh_from_db()
    assert report.rerun is None and not RerunRequest.objects.exists()


def test_an_anonymous_user_cannot_escalate(demo: Callable[[str], Run]) -> None:
    report = report_on(demo("rmsnorm-row-loop"))
    response = escalate_in_admin(Client(), report)
    assert response.redirect_chain and "/admin/login/" in response.redirect_chain[-1][0]
    with pytest.raises(DisputeRefusedError):
        escalate(report, AnonymousUser())
    report.refresh_from_db()
    assert report.rerun is None and not RerunRequest.objects.exists()


def end_with(rerun: RerunRequest, state: str, verdict: str) -> None:
    """A rerun ending as record_result ends it (the real worker's path: tests/runs/test_dispute_worker.py)."""
    RerunRequest.objects.filter(pk=rerun.pk).update(state=state, verdict=verdict, finished_at=timezone.now())
    rerun_ended.send(sender=RerunRequest, request=rerun)


@pytest.mark.parametrize(
    ("end", "outcome", "status"),
    [
        (lambda rerun, user: end_with(rerun, "succeeded", "not_reproduced"), "upheld", "resolved"),
        (lambda rerun, user: end_with(rerun, "succeeded", "reproduced"), "rejected", "dismissed"),
        (lambda rerun, user: cancel_rerun(rerun, user), "undecided", "resolved"),
        (lambda rerun, user: fail_queued(rerun, "NOT_RUNNABLE", "its documents are gone"), "undecided", "resolved"),
    ],
    ids=["upheld", "rejected", "cancelled", "failed"],
)
def test_when_the_rerun_ends_every_dispute_it_answers_closes_with_its_outcome(
    moderator: tuple[User, Client],
    demo: Callable[[str], Run],
    end: Callable[[RerunRequest, User], None],
    outcome: str,
    status: str,
) -> None:
    user, _ = moderator
    run = demo("rmsnorm-row-loop")
    reports = [report_on(run), report_on(run, "broken_correctness")]
    rerun = escalate(reports[0], user)
    escalate(reports[1], user)
    end(rerun, user)
    rerun.refresh_from_db()
    for report in reports:
        report.refresh_from_db()
        assert (report.dispute_outcome, report.status, report.dispute_closed_at) == (outcome, status, rerun.finished_at)
        assert report.moderated_by is not None and report.moderated_by.username == SYSTEM_USERNAME
    # An undecided dispute may be escalated again: it opens anew, on a new rerun.
    if outcome == "undecided":
        again = escalate(reports[0], user)
        reports[0].refresh_from_db()
        assert again != rerun and reports[0].dispute_is_open and reports[0].dispute_outcome == ""


@pytest.fixture
def policy(settings: Any, db: None) -> Any:
    """The verification policy on, and a worker of the demo's class (cpu) registered here."""
    settings.VERIFICATION_POLICY = True
    create_worker_key("tests-cpu", ["cpu"])
    return settings


def report_from_the_form(run: Run, category: str, capture: Any) -> IssueReport:
    with capture(execute=True):
        response = Client().post(f"/runs/{run.run_id}/report", report_data(category=category))
    assert response.status_code == 302
    return IssueReport.objects.filter(run=run).latest("created_at")


def test_with_the_policy_on_a_new_report_is_escalated_by_the_policy(
    policy: Any, demo: Callable[[str], Run], django_capture_on_commit_callbacks: Any
) -> None:
    run = demo("rmsnorm-row-loop")
    report = report_from_the_form(run, "wrong_numbers", django_capture_on_commit_callbacks)
    assert report.rerun is not None and report.dispute_is_open
    assert report.rerun.requested_by is not None and report.rerun.requested_by.username == SYSTEM_USERNAME
    assert report.rerun.reason.startswith("verification policy")
    # A second report shares the rerun already waiting; one of another kind is left to the moderators.
    second = report_from_the_form(run, "broken_correctness", django_capture_on_commit_callbacks)
    assert second.rerun == report.rerun
    licence = report_from_the_form(run, "license", django_capture_on_commit_callbacks)
    assert licence.rerun is None and licence.status == "open"


def test_the_policy_escalates_within_its_budget_and_not_at_all_when_off(
    policy: Any, demo: Callable[[str], Run], django_capture_on_commit_callbacks: Any
) -> None:
    policy.VERIFICATION_BUDGET_SECONDS_PER_DAY = 0
    spent = report_from_the_form(demo("rmsnorm-row-loop"), "wrong_numbers", django_capture_on_commit_callbacks)
    assert spent.rerun is None and spent.status == "open"  # waits for a moderator
    policy.VERIFICATION_BUDGET_SECONDS_PER_DAY = 3600
    policy.VERIFICATION_POLICY = False
    off = report_from_the_form(demo("softmax-row-loop"), "wrong_numbers", django_capture_on_commit_callbacks)
    assert off.rerun is None
    assert not RerunRequest.objects.exists()


def test_a_verdict_decided_again_carries_the_dispute_with_it(
    moderator: tuple[User, Client], demo: Callable[[str], Run]
) -> None:
    user, _ = moderator
    report = report_on(demo("rmsnorm-row-loop"))
    rerun = escalate(report, user)
    end_with(rerun, "succeeded", "not_reproduced")
    report.refresh_from_db()
    closed_at = report.dispute_closed_at
    assert report.dispute_outcome == "upheld" and closed_at is not None
    # As verification.reruns.reevaluate_run writes a verdict a new rule decides, and says so.
    RerunRequest.objects.filter(pk=rerun.pk).update(verdict="reproduced")
    rerun_ended.send(sender=RerunRequest, request=rerun)
    report.refresh_from_db()
    assert (report.dispute_outcome, report.status, report.dispute_closed_at) == ("rejected", "dismissed", closed_at)
    logged = LogEntry.objects.filter(object_id=str(report.pk), change_message__startswith="Dispute decided again")
    assert logged.exists()
