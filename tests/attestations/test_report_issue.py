"""POST /runs/<id>/report: an issue report goes to the moderators and is never published."""

from __future__ import annotations

from django.test import Client
from django.utils import timezone

from attestations.models import IssueReport
from runs.models import Run
from tests.attestations.form_data import report_data
from tests.pages import HTMX, visible_text

THANKS = "Thanks — your report went to the moderators; it is not published."


def report_url(run: Run) -> str:
    return f"/runs/{run.run_id}/report"


def test_the_form_has_a_page_of_its_own(client: Client, run: Run) -> None:
    response = client.get(report_url(run))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Report an issue with this run" in visible_text(html)
    assert f'action="{report_url(run)}"' in html
    assert f'hx-post="{report_url(run)}"' in html
    for category in ("wrong numbers", "broken correctness", "duplicate", "license", "other"):
        assert f">{category}</option>" in html


def test_with_htmx_a_report_swaps_in_a_thank_you(client: Client, run: Run) -> None:
    response = client.post(report_url(run), report_data(contact="me@example.org"), headers=HTMX)
    assert response.status_code == 200
    assert response.content.decode().strip().startswith('<div id="report-form"')
    assert THANKS in visible_text(response.content)
    report = IssueReport.objects.get()
    assert (report.run, report.category, report.status) == (run, "wrong_numbers", "open")
    assert report.contact == "me@example.org"


def test_without_javascript_a_report_redirects_to_the_report_section(client: Client, run: Run) -> None:
    response = client.post(report_url(run), report_data(body="<script>alert(1)</script>"))
    assert response.status_code == 302
    assert response["Location"] == f"{run.get_absolute_url()}#report"
    page = client.get(response["Location"]).content.decode()
    section = page.split('id="report"', 1)[1].split("</section>", 1)[0]
    assert THANKS in visible_text(section)
    # Reports are private: neither the body nor the contact reaches the page.
    assert "alert(1)" not in page
    assert IssueReport.objects.get().body == "<script>alert(1)</script>"


def test_field_errors(client: Client, run: Run) -> None:
    with_htmx = client.post(report_url(run), report_data(category="", body=""), headers=HTMX)
    assert with_htmx.status_code == 200
    assert visible_text(with_htmx.content).count("This field is required.") == 2

    without_js = client.post(report_url(run), report_data(category="rude"))
    assert without_js.status_code == 422
    assert "Select a valid choice. rude is not one of the available choices." in visible_text(without_js.content)
    assert not IssueReport.objects.exists()


def test_an_overlong_body_is_refused(client: Client, run: Run) -> None:
    response = client.post(report_url(run), report_data(body="x" * 4001), headers=HTMX)
    assert "Ensure this value has at most 4000 characters (it has 4001)." in visible_text(response.content)
    assert not IssueReport.objects.exists()


def test_a_withdrawn_run_can_still_be_reported(client: Client, run: Run) -> None:
    """A tombstone can be wrong too; only new notes are refused."""
    Run.objects.filter(pk=run.pk).update(withdrawn_at=timezone.now())
    client.post(report_url(run), report_data(), headers=HTMX)
    assert IssueReport.objects.filter(run=run).exists()


def test_a_filled_honeypot_is_thanked_and_dropped(client: Client, run: Run) -> None:
    response = client.post(report_url(run), report_data(website="buy now"))
    assert response.status_code == 302
    assert not IssueReport.objects.exists()
