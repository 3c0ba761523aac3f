"""A rerun followed live in a real browser: htmx polls while it is queued or running, and stops when it ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from runs.models import Run
from tests.runs.attested import rerun_here
from tests.test_browser_walk import ARTIFACTS
from verification.reruns import request_rerun

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("memory_broker")]


def test_the_run_page_follows_a_rerun_until_it_ends(
    browser: Any, live_server: Any, transactional_db: None, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-row-loop")
    rerun = request_rerun(run, user=None, reason="followed in a browser")
    page = browser.new_page()
    polls: list[str] = []
    page.on("request", lambda request: polls.append(request.url) if request.url.endswith("/reruns") else None)
    page.goto(f"{live_server.url}{run.get_absolute_url()}")
    page.evaluate("window.notReloaded = true")
    page.get_by_text(f"Rerun #{rerun.pk} is queued for a cpu worker").wait_for()

    # What a worker does, here in the test's process: the page must notice it without a reload.
    rerun_here(rerun)
    page.locator("#reruns").get_by_text("not reproduced").first.wait_for(timeout=15_000)
    page.locator("#evidence .status-not_reproduced").wait_for()
    assert page.evaluate("window.notReloaded") is True
    assert page.locator("#reruns[hx-trigger]").count() == 0

    seen = len(polls)
    page.wait_for_timeout(4500)
    assert len(polls) == seen, "the page kept polling after the rerun ended"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / "rerun-followed-live.png", full_page=True)
