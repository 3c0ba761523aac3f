"""A run's history page, the 410 tombstone of a withdrawn run, and the public status of its issue reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from attestations.models import IssueReport
from attestations.services import set_report_status
from runs.models import Run, RunStatusChange
from runs.services import restore_run, withdraw_run
from tests.conftest import ImportRuns
from tests.pages import sol_records, squeezed, visible_text, write_jsonl
from verification.models import EvidenceChange, RerunRequest


def history_text(client: Client, run: Run) -> str:
    response = client.get(f"/runs/{run.run_id}/history")
    assert response.status_code == 200
    return visible_text(response.content)


def test_every_version_is_listed_with_what_changed(client: Client, import_runs: ImportRuns, tmp_path: Path) -> None:
    records = sol_records(3)
    import_runs(write_jsonl(tmp_path / "first.jsonl", records))
    changed = [records[0] | {"latency_ms": records[0]["latency_ms"] * 2}, *records[1:]]
    import_runs(write_jsonl(tmp_path / "second.jsonl", changed))
    run = Run.objects.get(source="sol-execbench", external_id=str(records[0]["id"]))
    first, second = run.versions.order_by("imported_at", "id")

    text = history_text(client, run)
    assert text.index(first.digest[:23]) < text.index(second.digest[:23])
    assert "first version" in text
    assert "spec.timing" in text  # the latency moved, and the history names where
    versions = client.get(f"/runs/{run.run_id}/history.json").json()["versions"]
    assert [(v["digest"], v["current"]) for v in versions] == [(first.digest, False), (second.digest, True)]
    assert "spec.timing" in versions[1]["changed"]
    assert "current" in text.split(second.digest[:23], 1)[1][:40]


def test_withdrawals_and_restores_are_listed_without_who(
    client: Client, run: Run, admin_user: User, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        withdraw_run(run, "Submitted twice.", by=admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        restore_run(run, by=admin_user)
    changes = list(RunStatusChange.objects.filter(run=run).order_by("at", "id"))
    assert [(c.action, c.reason, c.by) for c in changes] == [
        ("withdrawn", "Submitted twice.", admin_user),
        ("restored", "", admin_user),
    ]

    text = history_text(client, run)
    assert "Withdrawn: Submitted twice." in text
    assert "Restored" in text
    assert admin_user.username not in text
    twin = client.get(f"/runs/{run.run_id}/history.json")
    assert [(c["action"], c["reason"]) for c in twin.json()["statusChanges"]] == [
        ("withdrawn", "Submitted twice."),
        ("restored", ""),
    ]
    assert admin_user.username not in twin.content.decode()


def test_saving_an_unchanged_withdrawal_adds_no_line(run: Run) -> None:
    withdraw_run(run, "Submitted twice.")
    withdraw_run(run, "Submitted twice.")
    withdraw_run(run, "A duplicate of another run.")
    reasons = list(RunStatusChange.objects.filter(run=run).order_by("at", "id").values_list("reason", flat=True))
    assert reasons == ["Submitted twice.", "A duplicate of another run."]


def test_every_evidence_change_is_listed_with_its_rerun(client: Client, run: Run) -> None:
    rerun = RerunRequest.objects.create(
        run=run,
        run_digest=run.digest,
        hardware="nvidia-b200",
        state=RerunRequest.State.SUCCEEDED,
        verdict="reproduced",
        verdict_reason="Every case passed, within the tolerance.",
    )
    EvidenceChange.objects.create(run=run, previous="reported", evidence="reproduced", rerun=rerun, rule_version=4)
    text = history_text(client, run)
    assert squeezed(f"Reported → Reproduced, by rerun #{rerun.pk} on nvidia-b200") in squeezed(text)
    assert "Every case passed, within the tolerance." in text


def test_a_withdrawn_run_answers_410_with_its_tombstone(
    client: Client, run: Run, django_capture_on_commit_callbacks: Any
) -> None:
    assert client.get(run.get_absolute_url()).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        withdraw_run(run, "Duplicate of another submission.")
    run.refresh_from_db()

    page = client.get(run.get_absolute_url())
    assert page.status_code == 410
    text = visible_text(page.content)
    assert f"Withdrawn on {run.withdrawn_at:%Y-%m-%d}." in text
    assert "Duplicate of another submission." in text
    assert run.digest in text

    twin = client.get(f"/runs/{run.run_id}.json")
    assert twin.status_code == 410
    tombstone = json.loads(twin.content)
    assert tombstone["withdrawn"]["reason"] == "Duplicate of another submission."
    assert tombstone["digest"] == run.digest
    assert tombstone["withdrawn"]["at"].startswith(f"{run.withdrawn_at:%Y-%m-%d}")
    assert client.get(tombstone["documents"]["run"]).status_code == 200  # the record itself stays
    assert client.get(tombstone["history"]).status_code == 200


def test_the_run_page_shows_each_reports_status_not_the_reporter(
    client: Client, run: Run, admin_user: User, django_capture_on_commit_callbacks: Any
) -> None:
    private = "call me at reporter@example.org, the numbers are from my notebook"
    with django_capture_on_commit_callbacks(execute=True):
        report = IssueReport.objects.create(
            run=run, category="wrong_numbers", body=private, contact="reporter@example.org"
        )
    assert "Wrong numbers · reported" in (text := visible_text(client.get(run.get_absolute_url()).content))
    assert "open" in text.split("Wrong numbers · reported", 1)[1][:40]

    with django_capture_on_commit_callbacks(execute=True):
        set_report_status(IssueReport.objects.filter(pk=report.pk), IssueReport.Status.TRIAGED, admin_user)
    html = client.get(run.get_absolute_url()).content.decode()
    assert "triaged" in visible_text(html).split("Wrong numbers · reported", 1)[1][:40]
    assert "reporter@example.org" not in html
    assert "my notebook" not in html
