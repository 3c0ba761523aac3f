"""POST /runs/<id>/notes: a reproduction or note, with htmx and without JavaScript."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from attestations.models import Attestation
from runs.models import Run
from tests.attestations.form_data import note_data
from tests.pages import HTMX, visible_text

THANKS = "Thanks — your note will appear once a moderator approves it."


def notes_url(run: Run) -> str:
    return f"/runs/{run.run_id}/notes"


def test_the_form_has_a_page_of_its_own(client: Client, run: Run) -> None:
    response = client.get(notes_url(run))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Add a reproduction or note</h1>" in html
    assert f'action="{notes_url(run)}"' in html
    assert f'hx-post="{notes_url(run)}"' in html
    assert "HX-Request" in response["Vary"]


def test_an_unknown_run_is_404(client: Client, run: Run) -> None:
    assert client.get("/runs/000000000000/notes").status_code == 404
    assert client.post("/runs/000000000000/notes", note_data()).status_code == 404


def test_with_htmx_a_note_swaps_in_a_thank_you_and_waits_for_moderation(client: Client, run: Run) -> None:
    response = client.post(notes_url(run), note_data(), headers=HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html
    assert html.strip().startswith('<div id="note-form"')
    assert THANKS in visible_text(html)
    attestation = Attestation.objects.get()
    assert attestation.run == run
    assert attestation.status == Attestation.Status.PENDING
    assert attestation.outcome == "reproduced"
    assert attestation.measured_latency_ns == pytest.approx(181_200)
    assert attestation.gpu == "NVIDIA H100 80GB HBM3"
    assert attestation.contact_email == "ada@example.org"


def test_without_javascript_a_note_redirects_to_the_notes_section_with_a_message(client: Client, run: Run) -> None:
    response = client.post(notes_url(run), note_data())
    assert response.status_code == 302
    assert response["Location"] == f"{run.get_absolute_url()}#notes"
    page = client.get(response["Location"])
    notes = page.content.decode().split('id="notes"', 1)[1].split("</section>", 1)[0]
    assert THANKS in visible_text(notes)
    # Pending: the page still has nothing to show.
    assert "No attestations yet." in visible_text(notes)
    assert "Ran the submission" not in page.content.decode()


def test_the_message_is_shown_once(client: Client, run: Run) -> None:
    client.post(notes_url(run), note_data())
    assert THANKS in client.get(run.get_absolute_url()).content.decode()
    assert THANKS not in client.get(run.get_absolute_url()).content.decode()


def test_with_htmx_field_errors_come_back_in_the_fragment(client: Client, run: Run) -> None:
    response = client.post(notes_url(run), note_data(outcome="", gpu="", body="kept <b>text</b>"), headers=HTMX)
    # htmx 2 swaps no 4xx by default: the errors must come with a 200 to reach the reader.
    assert response.status_code == 200
    text = visible_text(response.content)
    assert "Say how the reproduction came out." in text
    assert "Name the GPU you ran it on." in text
    assert "kept &lt;b&gt;text&lt;/b&gt;" in response.content.decode()
    assert not Attestation.objects.exists()


def test_without_javascript_field_errors_come_on_a_page_with_422(client: Client, run: Run) -> None:
    response = client.post(notes_url(run), note_data(kind="note", outcome="reproduced", body=""))
    assert response.status_code == 422
    html = response.content.decode()
    assert "<html" in html
    assert "Only a reproduction has an outcome; leave it empty for a note." in visible_text(html)
    assert "Write the note." in visible_text(html)
    assert not Attestation.objects.exists()


@pytest.mark.parametrize(
    ("value", "unit", "nanoseconds"),
    [("850", "ns", 850), ("12.125", "us", 12_125), ("2.66", "ms", 2_660_000), ("1e-3", "ms", 1_000)],
)
def test_latency_is_typed_with_a_unit_and_kept_in_nanoseconds(
    client: Client, run: Run, value: str, unit: str, nanoseconds: float
) -> None:
    client.post(notes_url(run), note_data(latency_value=value, latency_unit=unit), headers=HTMX)
    assert Attestation.objects.get().measured_latency_ns == pytest.approx(nanoseconds)


@pytest.mark.parametrize(
    ("value", "unit", "error"),
    [
        ("0", "us", "Enter a latency greater than zero."),
        ("-3", "us", "Enter a latency greater than zero."),
        ("fast", "us", "Enter a number."),
        ("nan", "us", "Enter a number."),
        ("5000", "s", "Select a valid choice."),
        ("2", "", "Choose ns, µs or ms."),
        ("1e300", "ms", "Enter a latency under one hour."),
    ],
)
def test_a_bad_latency_is_a_field_error(client: Client, run: Run, value: str, unit: str, error: str) -> None:
    response = client.post(notes_url(run), note_data(latency_value=value, latency_unit=unit), headers=HTMX)
    assert error in visible_text(response.content)
    assert not Attestation.objects.exists()


def test_a_note_needs_no_outcome_gpu_or_latency(client: Client, run: Run) -> None:
    data = note_data(kind="note", outcome="", gpu="", latency_value="", body="The workload list changed since.")
    client.post(notes_url(run), data, headers=HTMX)
    note = Attestation.objects.get()
    assert (note.kind, note.outcome, note.measured_latency_ns) == ("note", "", None)


def test_the_submitted_status_is_ignored(client: Client, run: Run) -> None:
    client.post(notes_url(run), {**note_data(), "note-status": "approved", "status": "approved"}, headers=HTMX)
    assert Attestation.objects.get().status == Attestation.Status.PENDING


def test_a_filled_honeypot_is_thanked_and_dropped(client: Client, run: Run) -> None:
    response = client.post(notes_url(run), note_data(website="http://spam.example"), headers=HTMX)
    assert THANKS in visible_text(response.content)
    assert not Attestation.objects.exists()


def test_a_withdrawn_run_accepts_no_notes(client: Client, run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(withdrawn_at=timezone.now(), withdrawn_reason="duplicate submission")
    refusal = "This run was withdrawn on"

    page = client.get(notes_url(run))
    assert refusal in visible_text(page.content)
    assert "<form" not in page.content.decode().split('id="note-form"', 1)[1]
    run_page = client.get(run.get_absolute_url()).content.decode()
    assert refusal in visible_text(run_page)
    assert f'href="{notes_url(run)}"' not in run_page  # no way to a form that would refuse

    with_htmx = client.post(notes_url(run), note_data(), headers=HTMX)
    assert with_htmx.status_code == 200
    assert "it accepts no new notes." in visible_text(with_htmx.content)

    without_js = client.post(notes_url(run), note_data())
    assert without_js.status_code == 409
    assert "it accepts no new notes." in visible_text(without_js.content)
    assert not Attestation.objects.exists()


def test_get_and_post_only(client: Client, run: Run) -> None:
    assert client.put(notes_url(run)).status_code == 405
