"""Five submissions per form per client in ten minutes; the sixth gets a form error, never a 500."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory

from attestations.models import Attestation, IssueReport
from runs.models import Run
from tests.attestations.form_data import note_data, report_data
from tests.pages import HTMX, visible_text
from web import ratelimit

TOO_MANY = "Too many submissions from your network; please try again in"


def post_notes(client: Client, run: Run, times: int, **extra: str) -> None:
    for _ in range(times):
        response = client.post(f"/runs/{run.run_id}/notes", note_data(), headers=HTMX, **extra)
        assert TOO_MANY not in visible_text(response.content)


def test_the_sixth_note_is_refused_with_a_form_error(client: Client, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ten seconds into a window: the allowance comes back when it ends.
    monkeypatch.setattr(ratelimit, "_now", lambda: 1_000_000 * ratelimit.WINDOW_SECONDS + 10.0)
    post_notes(client, run, ratelimit.SUBMISSIONS_PER_WINDOW)

    with_htmx = client.post(f"/runs/{run.run_id}/notes", note_data(), headers=HTMX)
    assert with_htmx.status_code == 200
    assert f"{TOO_MANY} 10 min." in visible_text(with_htmx.content)
    assert with_htmx["Retry-After"] == str(ratelimit.WINDOW_SECONDS - 10)

    without_js = client.post(f"/runs/{run.run_id}/notes", note_data())
    assert without_js.status_code == 429
    assert TOO_MANY in visible_text(without_js.content)
    assert Attestation.objects.count() == ratelimit.SUBMISSIONS_PER_WINDOW


def test_invalid_attempts_do_not_count(client: Client, run: Run) -> None:
    for _ in range(ratelimit.SUBMISSIONS_PER_WINDOW + 2):
        client.post(f"/runs/{run.run_id}/notes", note_data(gpu=""), headers=HTMX)
    post_notes(client, run, 1)
    assert Attestation.objects.count() == 1


def test_each_form_and_each_client_has_its_own_allowance(client: Client, run: Run) -> None:
    post_notes(client, run, ratelimit.SUBMISSIONS_PER_WINDOW)
    client.post(f"/runs/{run.run_id}/report", report_data(), headers=HTMX)
    assert IssueReport.objects.count() == 1
    post_notes(client, run, 1, REMOTE_ADDR="203.0.113.9")
    assert Attestation.objects.count() == ratelimit.SUBMISSIONS_PER_WINDOW + 1


def test_an_ipv6_client_is_one_client_across_its_64(client: Client, run: Run) -> None:
    for host in range(ratelimit.SUBMISSIONS_PER_WINDOW):
        post_notes(client, run, 1, REMOTE_ADDR=f"2001:db8:1:2::{host + 1}")
    response = client.post(f"/runs/{run.run_id}/notes", note_data(), REMOTE_ADDR="2001:db8:1:2:ffff::1")
    assert response.status_code == 429


def test_the_allowance_returns_when_the_window_turns(client: Client, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    window_start = 1_000_000 * ratelimit.WINDOW_SECONDS
    now = window_start + 30.0
    monkeypatch.setattr(ratelimit, "_now", lambda: now)
    post_notes(client, run, ratelimit.SUBMISSIONS_PER_WINDOW)
    now = window_start + ratelimit.WINDOW_SECONDS - 30
    response = client.post(f"/runs/{run.run_id}/notes", note_data())
    assert response.status_code == 429
    assert response["Retry-After"] == "30"
    assert f"{TOO_MANY} 1 min." in visible_text(response.content)
    now += 31
    post_notes(client, run, 1)
    assert Attestation.objects.count() == ratelimit.SUBMISSIONS_PER_WINDOW + 1


def test_the_client_is_known_only_by_a_keyed_hash(client: Client, run: Run, rf: RequestFactory) -> None:
    address = "198.51.100.23"
    client.post(f"/runs/{run.run_id}/notes", note_data(), REMOTE_ADDR=address)
    key = ratelimit.client_key(rf.post("/", REMOTE_ADDR=address), "notes")
    assert address not in key
    assert ratelimit.count_in_window(key) == 1
    assert address not in str(Attestation.objects.values().get())
