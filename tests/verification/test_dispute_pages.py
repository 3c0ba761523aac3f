"""/disputes, /disputes.json and /disputes/feed/, and a run page's link to its disputes: what the public sees of
a dispute (never the report's text or contact), filtered, paginated, escaped, and fresh after each change."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from attestations.models import IssueReport
from runs.models import Run
from tests.conftest import ImportRuns
from tests.pages import queries_for, visible_text
from tests.runs.conftest import DEMO, memory_broker  # noqa: F401  (a fixture)
from verification import dispute_views
from verification.disputes import escalate
from verification.models import RerunAttestation, RerunRequest, WorkerKey
from verification.reruns import cancel_rerun, rerun_ended
from verification.worker_keys import create_worker_key

SECRET_BODY = "The latency is 20 times too low; private detail 7f3a."
SECRET_CONTACT = "reporter-7f3a@example.org"
pytestmark = pytest.mark.usefixtures("memory_broker")
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def dispute(run: Run, *, state: str = "queued", verdict: str = "", days_ago: int = 0, **fields: Any) -> IssueReport:
    """A report escalated to a rerun in `state`; closed (as the rerun's end closes it) when the rerun ended."""
    finished = state not in RerunRequest.ACTIVE_STATES
    rerun = RerunRequest.objects.create(
        run=run,
        run_digest=run.digest,
        hardware="cpu",
        state=state,
        verdict=verdict,
        finished_at=timezone.now() if finished else None,
    )
    opened = timezone.now() - timedelta(days=days_ago)
    report = IssueReport.objects.create(
        run=run, category="wrong_numbers", body=SECRET_BODY, contact=SECRET_CONTACT, **fields
    )
    IssueReport.objects.filter(pk=report.pk).update(rerun=rerun, escalated_at=opened)
    if finished:
        rerun_ended.send(sender=RerunRequest, request=rerun)
    report.refresh_from_db()
    return report


def listed(client: Client, query: str = "") -> list[tuple[int, str, str | None]]:
    rows = client.get(f"/disputes.json{query}").json()["disputes"]
    return [(row["report"], row["state"], row["outcome"]) for row in rows]


def test_with_no_dispute_the_page_says_so(client: Client, db: None) -> None:
    assert "No disputes yet." in visible_text(client.get("/disputes").content)
    assert "No dispute is open." in visible_text(client.get("/disputes?state=open").content)
    assert client.get("/disputes.json").json()["disputes"] == []
    assert "<entry>" not in client.get("/disputes/feed/").content.decode()


def test_disputes_are_listed_newest_first_with_their_outcome_dates_and_attestation(
    client: Client, run: Run, admin_user: User
) -> None:
    upheld = dispute(run, state="succeeded", verdict="not_reproduced", days_ago=2)
    rejected = dispute(run, state="succeeded", verdict="reproduced", days_ago=1)
    waiting = dispute(run)
    assert upheld.rerun is not None
    RerunRequest.objects.filter(pk=upheld.rerun.pk).update(
        attestation=RerunAttestation.objects.create(
            request=upheld.rerun,
            attempt=1,
            job_id="j1",
            worker_key=_worker_key(),
            envelope={},
            received_at=timezone.now(),
        )
    )
    assert listed(client) == [
        (waiting.pk, "open", None),
        (rejected.pk, "closed", "rejected"),
        (upheld.pk, "closed", "upheld"),
    ]
    html = client.get("/disputes").content.decode()
    text = visible_text(html)
    assert "upheld" in text and "rejected" in text and "open" in text
    assert f'href="/reruns/{upheld.rerun.pk}/attestation.json"' in html
    assert f'href="{run.get_absolute_url()}#rerun-{upheld.rerun.pk}"' in html
    assert upheld.dispute_closed_at is not None
    assert upheld.dispute_closed_at.strftime("%Y-%m-%d") in text
    row = client.get("/disputes.json").json()["disputes"][2]
    assert row["runId"] == run.run_id and row["category"] == "wrong_numbers"
    assert row["outcomeMeaning"] == "upheld: the rerun did not reproduce the run"
    assert row["rerun"]["attestation"] == f"/reruns/{upheld.rerun.pk}/attestation.json"
    assert row["closedAt"] == upheld.dispute_closed_at.isoformat()
    # What the reporter wrote, and how to reach them, stay with the moderators.
    for url in ("/disputes", "/disputes.json", "/disputes/feed/", run.get_absolute_url()):
        page = client.get(url).content.decode()
        assert SECRET_BODY not in page and "7f3a" not in page, url


def _worker_key() -> WorkerKey:
    return create_worker_key("tests-cpu", ["cpu"]).registered


def test_state_and_run_filters(client: Client, run: Run) -> None:
    closed = dispute(run, state="cancelled")
    opened = dispute(run)
    other_run = Run.objects.exclude(pk=run.pk).first()
    assert other_run is not None
    elsewhere = dispute(other_run)
    assert [pk for pk, *_ in listed(client, "?state=open")] == [elsewhere.pk, opened.pk]
    assert listed(client, "?state=closed") == [(closed.pk, "closed", "undecided")]
    assert [pk for pk, *_ in listed(client, f"?run={run.run_id}")] == [opened.pk, closed.pk]
    assert [pk for pk, *_ in listed(client, f"?run={run.run_id}&state=closed")] == [closed.pk]
    # A filter it does not know filters nothing, and is never written back into the page.
    assert len(listed(client, "?state=<b>bogus</b>")) == 3
    response = client.get("/disputes", {"run": HOSTILE, "state": HOSTILE})
    assert response.status_code == 200 and "<script>alert" not in response.content.decode()
    assert "No disputes yet" in visible_text(client.get("/disputes?run=nosuchrun").content)


def test_pages_of_disputes(client: Client, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispute_views, "PER_PAGE", 2)
    made = [dispute(run, state="cancelled", days_ago=days).pk for days in (3, 2, 1)]
    first = client.get("/disputes.json").json()
    assert [row["report"] for row in first["disputes"]] == made[::-1][:2]
    assert first["next"] and first["start"] is None
    second = client.get(first["next"]).json()
    assert [row["report"] for row in second["disputes"]] == made[:1]
    assert second["next"] is None
    html = client.get("/disputes").content.decode()
    assert 'rel="next"' in html and "Disputes 1–2" in visible_text(html)


def test_a_public_summary_is_shown_escaped(client: Client, run: Run) -> None:
    dispute(run, state="succeeded", verdict="not_reproduced", public_summary=HOSTILE)
    html = client.get("/disputes").content.decode()
    assert HOSTILE not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert client.get("/disputes.json").json()["disputes"][0]["summary"] == HOSTILE
    feed = client.get("/disputes/feed/").content.decode()
    assert "<script>" not in feed


def test_the_feed_has_an_entry_when_a_dispute_opens_and_one_for_its_outcome(client: Client, run: Run) -> None:
    dispute(run, state="succeeded", verdict="not_reproduced", days_ago=1)
    dispute(run)
    feed = client.get("/disputes/feed/")
    assert feed["Content-Type"].startswith("application/atom+xml")
    titles = [part.split("</title>")[0] for part in feed.content.decode().split("<entry><title>")[1:]]
    assert titles == [
        f"Dispute opened: wrong numbers on run {run.run_id}",
        f"Dispute upheld: wrong numbers on run {run.run_id}",
        f"Dispute opened: wrong numbers on run {run.run_id}",
    ]


def test_a_run_page_links_its_disputes(client: Client, run: Run) -> None:
    IssueReport.objects.create(run=run, category="license", body="not a dispute")
    report = dispute(run, state="succeeded", verdict="not_reproduced")
    html = client.get(run.get_absolute_url()).content.decode()
    assert f'href="/disputes?run={run.run_id}"' in html
    assert "1 dispute of this run" in visible_text(html)
    assert f"dispute upheld {report.dispute_closed_at:%Y-%m-%d}" in visible_text(html)


def test_opening_and_closing_a_dispute_retire_the_pages_that_show_it(
    client: Client, import_runs: ImportRuns, admin_user: User, django_capture_on_commit_callbacks: Any
) -> None:
    import_runs(DEMO)
    run = Run.objects.get(implementation_name="rmsnorm-row-loop", external_id__startswith="demo")
    report = IssueReport.objects.create(run=run, category="wrong_numbers", body=SECRET_BODY)
    pages = ["/disputes", "/disputes.json", "/disputes/feed/", run.get_absolute_url()]
    for page in pages:
        queries_for(client, page)
    assert {page: queries_for(client, page) for page in pages} == dict.fromkeys(pages, 0)  # cached
    with django_capture_on_commit_callbacks(execute=True):
        rerun = escalate(report, admin_user)
    assert listed(client) == [(report.pk, "open", None)]
    assert "Dispute opened" in client.get("/disputes/feed/").content.decode()
    assert "dispute open" in visible_text(client.get(run.get_absolute_url()).content)
    with django_capture_on_commit_callbacks(execute=True):
        cancel_rerun(rerun, admin_user)
    assert listed(client) == [(report.pk, "closed", "undecided")]
    assert "Dispute undecided" in client.get("/disputes/feed/").content.decode()
    assert "dispute undecided" in visible_text(client.get(run.get_absolute_url()).content)
