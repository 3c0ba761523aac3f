"""The note form in a real browser: htmx swaps the errors and the thanks in place, no page load."""

from __future__ import annotations

from typing import Any

import pytest

from attestations.models import Attestation
from runs.models import Run

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser: Any) -> Any:
    return browser.new_page()


def test_errors_and_thanks_are_swapped_into_the_run_page(
    page: Any, live_server: Any, transactional_db: None, run: Run
) -> None:
    url = f"{live_server.url}{run.get_absolute_url()}"
    page.goto(url)
    page.evaluate("window.notReloaded = true")
    page.locator("summary", has_text="Add a reproduction or note").click()
    form = page.locator("#note-form")

    form.get_by_label("GPU").fill("NVIDIA H100 80GB HBM3")
    form.get_by_role("button", name="Send for moderation").click()
    form.get_by_text("Say how the reproduction came out.").wait_for()
    assert page.evaluate("window.notReloaded") is True
    assert not Attestation.objects.exists()

    form = page.locator("#note-form")
    form.get_by_label("Outcome (reproductions only)").select_option("not_reproduced")
    form.get_by_label("Measured latency").fill("2.5")
    form.get_by_label("Unit").select_option("ms")
    form.get_by_role("button", name="Send for moderation").click()
    page.get_by_text("Thanks — your note will appear once a moderator approves it.").wait_for()
    assert page.evaluate("window.notReloaded") is True
    assert page.url == url

    attestation = Attestation.objects.get()
    assert (attestation.status, attestation.outcome, attestation.gpu) == (
        "pending",
        "not_reproduced",
        "NVIDIA H100 80GB HBM3",
    )
    assert attestation.measured_latency_ns == pytest.approx(2_500_000)


def test_without_javascript_the_form_has_a_page_of_its_own(
    browser: Any, live_server: Any, transactional_db: None, run: Run
) -> None:
    page = browser.new_context(java_script_enabled=False).new_page()
    page.goto(f"{live_server.url}{run.get_absolute_url()}")
    page.locator("summary", has_text="Add a reproduction or note").click()
    page.get_by_role("link", name="Open the form: add a reproduction or note →").click()

    page.get_by_role("radio", name="note", exact=True).check()
    page.get_by_label("What you did and saw").fill("Same figures on my B200.")
    page.get_by_role("button", name="Send for moderation").click()
    page.get_by_text("Thanks — your note will appear once a moderator approves it.").wait_for()
    assert page.url == f"{live_server.url}{run.get_absolute_url()}#notes"
    assert Attestation.objects.get().body == "Same figures on my B200."
