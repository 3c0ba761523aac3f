"""Moderators withdraw a run in the admin; its permalink stays as a tombstone."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User
from django.test import Client

from runs.models import Run
from tests.conftest import ImportRuns
from tests.pages import squeezed, visible_text


def test_a_moderator_withdraws_and_restores_a_run(
    client: Client, admin_user: User, import_runs: ImportRuns, sample: Path
) -> None:
    import_runs(sample / "sol-execbench")
    run = Run.objects.get(external_id="18134")
    client.force_login(admin_user)
    change_url = f"/admin/runs/run/{run.pk}/change/"
    change_page = squeezed(visible_text(client.get(change_url).content))
    assert f"{run.digest}imported" in change_page  # the versions, each with its import time
    response = client.post(change_url, {"withdrawn_reason": "Submitted twice.", "_save": "Save"})
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.withdrawn_at is not None
    assert run.source_rank is None
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert "Submitted twice." in page
    assert run.digest in page
    assert run.run_id not in [r["runId"] for r in client.get("/index.json").json()["runs"]]

    client.post(change_url, {"withdrawn_reason": "", "_save": "Save"})
    run.refresh_from_db()
    assert run.withdrawn_at is None
    assert run.source_rank == 6


def test_records_cannot_be_deleted_or_edited_in_the_admin(
    client: Client, admin_user: User, import_runs: ImportRuns, sample: Path
) -> None:
    import_runs(sample / "sol-execbench" / "submissions.jsonl")
    run = Run.objects.first()
    assert run is not None
    client.force_login(admin_user)
    assert client.get(f"/admin/runs/run/{run.pk}/delete/").status_code == 403
    assert client.post(f"/admin/runs/document/{run.digest}/change/", {}).status_code == 403
    assert client.get("/admin/runs/run/").status_code == 200
