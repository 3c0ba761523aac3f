"""The run page in Chromium at 1280 and 390 px: the reported figure beside the deciding rerun's, a rerun's own
page linking back, cases named by their axes, and nothing wider than the window. Screenshots are kept in
test-artifacts/browser/."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from runs.display import format_latency
from runs.models import Run
from tests.runs.run_page_reruns import record_rerun, result_on_cases
from tests.test_browser_walk import ARTIFACTS
from verification.models import RerunRequest

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("memory_broker")]
WIDTHS = [1280, 390]


@pytest.fixture
def reran(transactional_db: None, demo: Callable[[str], Run]) -> tuple[Run, RerunRequest]:
    """A demo run with a conclusive rerun on its own hardware class, twice as fast as it reported."""
    run = demo("rmsnorm-vectorised")
    assert run.latency_ns is not None
    rerun = record_rerun(run, result_on_cases(run, median=run.latency_ns / 2))
    assert rerun.verdict == "reproduced" and rerun.result_run is not None
    return run, rerun


def open_page(browser: Any, url: str, width: int) -> Page:
    page: Page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(url)
    return page


def assert_within_the_window(page: Page, width: int, *selectors: str) -> None:
    """No horizontal scroll, and each element's box lies inside the window."""
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    for selector in selectors:
        box = page.locator(selector).first.bounding_box()
        assert box is not None, selector
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, (selector, box)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_run_page_leads_with_the_reported_and_the_rerun_figures(
    browser: Any, live_server: Any, reran: tuple[Run, RerunRequest], width: int
) -> None:
    run, rerun = reran
    page = open_page(browser, f"{live_server.url}{run.get_absolute_url()}", width)
    top = page.locator("#measurement")
    expect(top.locator(".primary")).to_contain_text(format_latency(run.latency_ns))
    expect(top.locator(".measured-on")).to_contain_text("CPU · AMD EPYC")
    figure = top.locator(".rerun-figure")
    expect(figure).to_contain_text(f"KernelIndex rerun #{rerun.pk}")
    expect(figure).to_contain_text(f"{format_latency((run.latency_ns or 0) / 2)} median (95 % interval")
    expect(figure).to_contain_text("on CPU · Intel Xeon · 0.50× the reported median (faster)")
    expect(top.locator("#evidence .status")).to_have_text("Reproduced")
    assert_within_the_window(page, width, "h1", ".primary", ".measured-on", ".rerun-figure", "#evidence .status")

    # The rerun's cases are named by the workload's axes, not by the uuids the harness reports.
    page.locator("#reruns details.rerun-cases summary").click()
    cases = page.locator("#reruns table.cases")
    expect(cases).to_contain_text("batch_size=128")
    expect(cases).not_to_contain_text("3b3be6ba")
    if width == 1280:
        # Every per-case table fits its column: no column clipped behind a scroll bar.
        assert page.evaluate(
            "Array.from(document.querySelectorAll('table.cases'))"
            ".every(t => t.scrollWidth <= t.parentElement.clientWidth)"
        )
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"run-page-{width}.png", full_page=True)


@pytest.mark.parametrize("width", WIDTHS)
def test_a_reruns_own_page_says_whose_rerun_it_is_and_links_back(
    browser: Any, live_server: Any, reran: tuple[Run, RerunRequest], width: int
) -> None:
    run, rerun = reran
    assert rerun.result_run is not None
    page = open_page(browser, f"{live_server.url}{rerun.result_run.get_absolute_url()}", width)
    header = page.locator(".notice.rerun-of")
    expect(header).to_contain_text(f"This is a KernelIndex rerun (rerun #{rerun.pk}) of run {run.run_id}")
    expect(header.locator(".status")).to_have_text("Reproduced")
    expect(page.locator("#evidence")).not_to_contain_text("as the source published it")
    assert_within_the_window(page, width, "h1", ".notice.rerun-of", ".primary", ".measured-on")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"rerun-result-page-{width}.png", full_page=True)
    header.get_by_role("link", name=run.run_id).click()
    expect(page.locator("h1")).to_contain_text(run.run_id)
    expect(page.locator(f"#rerun-{rerun.pk}")).to_be_visible()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_moderators_rerun_form_offers_the_classes_in_a_select(
    browser: Any, live_server: Any, transactional_db: None, demo: Callable[[str], Run], moderator: Any, width: int
) -> None:
    from django.conf import settings
    from django.test import Client

    run = demo("rmsnorm-vectorised")
    client = Client()
    client.force_login(moderator)
    context = browser.new_context(viewport={"width": width, "height": 900})
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": live_server.url}])
    page = context.new_page()
    page.goto(f"{live_server.url}{run.get_absolute_url()}#reruns")
    form = page.locator("form.rerun-form")
    hardware = form.get_by_label("Hardware class")
    expect(hardware).to_have_value("")  # the run's own class unless the moderator picks another
    options = hardware.locator("option")
    expect(options.first).to_have_text("the run's own class")
    expect(hardware.locator("option[value='nvidia-h100']")).to_have_text("NVIDIA H100")
    assert_within_the_window(page, width, "form.rerun-form", "form.rerun-form select")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    form.screenshot(path=ARTIFACTS / f"rerun-form-{width}.png")
    context.close()
