"""A dispute end to end: a report about wrong numbers on the demo's inflated run (rmsnorm-row-loop reports
latencies 20 times lower than it runs), escalated by a moderator in one step, rerun by a real worker in its
sandbox, ends upheld on the report, /disputes, its JSON twin and feed, with its date and signed attestation."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from attestations.models import IssueReport
from runs.models import Run
from tests.attestations.form_data import report_data
from tests.pages import visible_text
from tests.runs.conftest import Worker, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_report_about_wrong_numbers_escalated_ends_upheld_on_the_report_and_disputes(
    client: Client, moderator: User, demo: Callable[[str], Run], worker: Worker
) -> None:
    run = demo("rmsnorm-row-loop")
    anonymous = Client()
    filed = anonymous.post(f"/runs/{run.run_id}/report", report_data(body="Its latencies are 20 times too low."))
    assert filed.status_code == 302
    report = IssueReport.objects.get(run=run)
    moderator.user_permissions.add(Permission.objects.get(codename="change_issuereport"))
    client.force_login(moderator)
    escalated = client.post(
        "/admin/attestations/issuereport/",
        {"action": "escalate_to_dispute", "_selected_action": [str(report.pk)]},
        follow=True,
    )
    report.refresh_from_db()
    assert report.rerun is not None, visible_text(escalated.content)
    assert listed_outcomes(anonymous) == [(report.pk, "open", None)]
    rerun = report.rerun
    wait_for(rerun)
    rerun.refresh_from_db()
    assert (rerun.verdict, rerun.attestation_id is not None) == ("not_reproduced", True), worker.log()[-2000:]

    report.refresh_from_db()
    assert (report.dispute_outcome, report.status) == ("upheld", "resolved")
    assert report.dispute_closed_at == rerun.finished_at
    closed_on = f"{report.dispute_closed_at:%Y-%m-%d}"
    attestation = f"/reruns/{rerun.pk}/attestation.json"
    assert listed_outcomes(anonymous) == [(report.pk, "closed", "upheld")]
    (row,) = anonymous.get("/disputes.json?state=closed").json()["disputes"]
    assert (row["closedAt"][:10], row["rerun"]["attestation"]) == (closed_on, attestation)
    html = anonymous.get("/disputes").content.decode()
    assert f'href="{attestation}"' in html
    text = visible_text(html)
    assert f"{run.run_id} wrong numbers" in text and f"upheld {closed_on}" in text
    assert "Its latencies are 20 times too low." not in html  # the report's text stays private
    assert anonymous.get(attestation).status_code == 200
    assert f"dispute upheld {closed_on}" in visible_text(anonymous.get(run.get_absolute_url()).content)
    assert "Dispute upheld: wrong numbers on run" in anonymous.get("/disputes/feed/").content.decode()


def listed_outcomes(client: Client) -> list[tuple[int, str, str | None]]:
    rows = client.get("/disputes.json").json()["disputes"]
    return [(row["report"], row["state"], row["outcome"]) for row in rows]
