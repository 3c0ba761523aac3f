"""Home, a leaderboard and the compare page in Chromium at 1280 and 390 px: evidence beside every figure.

A run whose reported figure a rerun did not reproduce (the demo's rmsnorm-row-loop, reported
fastest) carries its badge everywhere and is ranked after the others; at 390 px the rows stack,
so the run, its figure, its evidence and its hardware are read without scrolling sideways.
Screenshots of each page at each width are kept in test-artifacts/lists/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from runs.figures import refresh_group_figures
from runs.models import EVIDENCE_MEANINGS, Run
from tests.conftest import SAMPLE_DATA, ImportRuns

ROOT = Path(__file__).resolve().parent.parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "lists"
WIDTHS = {"desktop": 1280, "phone": 390}
pytestmark = pytest.mark.browser


@pytest.fixture
def disputed(import_runs: ImportRuns) -> Run:
    """The demo and the SOL-ExecBench sample, with the demo's fastest reported RMSNorm not reproduced."""
    import_runs(ROOT / "demo", SAMPLE_DATA / "sol-execbench" / "submissions.jsonl")
    run = Run.objects.get(source="kernelindex", implementation_name="rmsnorm-row-loop", external_id__startswith="demo")
    assert Run.objects.rankable().filter(group=run.group).order_by("latency_ns").first() == run  # reported fastest
    # What a rerun's verdict writes (verification.reruns.refresh_evidence); the group's figures kept as every
    # writer keeps them.
    Run.objects.filter(pk=run.pk).update(evidence=Run.Evidence.NOT_REPRODUCED)
    refresh_group_figures([run.group_id])
    run.refresh_from_db()
    return run


def open_at(browser: Browser, width: int, url: str, failed: list[str] | None = None) -> Page:
    """The page at that width; every request it makes that fails (a missing icon, say) goes into `failed`."""
    page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    if failed is not None:
        page.on("response", lambda response: failed.append(response.url) if response.status >= 400 else None)
    page.goto(url)
    return page


def no_sideways_scroll(page: Page) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth"))


def within_width(page: Page, locator: Any, width: int) -> None:
    """Shown, and inside the viewport's width: read without scrolling sideways."""
    expect(locator).to_be_visible()
    box = locator.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, box


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"{name}.png", full_page=True)


@pytest.mark.parametrize("device", WIDTHS)
def test_a_leaderboard_ranks_a_not_reproduced_run_after_the_others_with_its_badge(
    browser: Browser, live_server: Any, disputed: Run, device: str
) -> None:
    width = WIDTHS[device]
    page = open_at(browser, width, f"{live_server.url}{disputed.group.get_absolute_url()}?run={disputed.run_id}")
    rows = page.locator("table.leaderboard tbody tr")
    ids = [text.strip() for text in rows.locator("td.key").all_inner_texts()]
    ranks = [text.strip() for text in rows.locator("td.rank").all_inner_texts()]
    # Reported fastest, it comes after the run that was not disputed; the failed run is not ranked at all.
    assert ids.index(disputed.run_id) == 1 and ranks == ["1", "2", "—"], (ids, ranks)
    row = rows.nth(1)
    badge = row.locator(".evidence-badge")
    expect(badge).to_have_text("Evidence: Not reproduced")
    meaning = EVIDENCE_MEANINGS[Run.Evidence.NOT_REPRODUCED]
    expect(badge).to_have_attribute("title", f"Evidence: Not reproduced. {meaning}")
    expect(rows.nth(0).locator(".evidence-badge")).to_have_text("Evidence: Reported")
    expect(page.locator("#rank-rule")).to_contain_text("not reproduce are ranked after every other run")
    # The chart draws the disputed run as a cross, ringed as the run this page was opened for.
    expect(page.locator("figure.chart path.point.not-reproduced")).to_have_count(1)
    expect(page.locator("figure.chart circle.viewed-ring")).to_have_count(1)
    expect(page.locator("figure.chart figcaption")).to_contain_text("not reproduced by a rerun (1)")

    for cell in ("td.key", "td.rank", "td[data-label=Latency]", ".evidence-badge"):
        within_width(page, row.locator(cell), width)
    within_width(page, page.locator("dl.facts dd").first, width)  # the group's hardware
    expect(page.locator("dl.facts").first).to_contain_text("Hardware")
    assert no_sideways_scroll(page)
    shot(page, f"leaderboard-{device}")
    page.context.close()


@pytest.mark.parametrize("device", WIDTHS)
def test_home_shows_each_runs_evidence_hardware_and_date(
    browser: Browser, live_server: Any, disputed: Run, device: str
) -> None:
    width = WIDTHS[device]
    failed: list[str] = []
    page = open_at(browser, width, f"{live_server.url}/?q={disputed.run_id}", failed)
    row = page.locator("table.runs tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator(".evidence-badge")).to_have_text("Evidence: Not reproduced")
    for label, text in (("Run", disputed.run_id), ("Latency", "median"), ("Hardware", "CPU")):
        cell = row.locator(f"td[data-label={label}]")
        expect(cell).to_contain_text(text)
        within_width(page, cell, width)
    within_width(page, row.locator(".evidence-badge"), width)

    page.goto(f"{live_server.url}/")
    rows = page.locator("table.runs tbody tr")
    expect(rows.first).to_be_visible()
    assert no_sideways_scroll(page)
    for row in rows.all()[:10]:
        for label in ("Run", "Latency", "Hardware"):
            within_width(page, row.locator(f"td[data-label={label}]"), width)
        within_width(page, row.locator(".evidence-badge"), width)
    if device == "desktop":
        # Every row one line high, and every column inside the page: long names are cut, in full on hover.
        heights = [box["height"] for box in (r.bounding_box() for r in rows.all()) if box]
        assert max(heights) < 1.5 * min(heights), heights
        columns = page.evaluate(
            "[...document.querySelectorAll('table.runs th')].map(e => [e.innerText, e.offsetWidth])"
        )
        fits = "(e => e.scrollWidth <= e.clientWidth)(document.querySelector('.table-scroll'))"
        assert page.evaluate(fits), str(columns)
        implementation = rows.first.locator("td[data-label=Implementation]")
        assert implementation.get_attribute("title") == implementation.inner_text()
        expect(page.locator("table.runs thead")).to_contain_text("Observed")
    shot(page, f"home-{device}")
    assert failed == []  # the stylesheet, scripts and icon all answer
    page.context.close()


@pytest.mark.parametrize("device", WIDTHS)
def test_compare_qualifies_a_ratio_of_a_not_reproduced_figure(
    browser: Browser, live_server: Any, disputed: Run, device: str
) -> None:
    other = Run.objects.rankable().filter(group=disputed.group).exclude(pk=disputed.pk).first()
    assert other is not None
    width = WIDTHS[device]
    page = open_at(browser, width, f"{live_server.url}/compare/{other.run_id}/{disputed.run_id}")
    headline = page.locator("p.primary")
    expect(headline.locator(".evidence-badge")).to_have_text(["Evidence: Not reproduced", "Evidence: Reported"])
    expect(headline).to_contain_text("as reported")
    expect(page.locator("#not-reproduced")).to_contain_text(f"A KernelIndex rerun did not reproduce {disputed.run_id}")
    within_width(page, headline.locator(".evidence-badge").first, width)
    # The sources are monospace blocks, and the field names are not broken over lines.
    source = page.locator("table.diff pre.source").first
    expect(source).to_be_visible()
    assert "monospace" in source.evaluate("e => getComputedStyle(e).fontFamily")
    field = page.locator("table.diff th.field").first
    line = float(field.evaluate("e => parseFloat(getComputedStyle(e.querySelector('code')).lineHeight) || 20"))
    box = field.locator("code").bounding_box()
    assert box is not None and box["height"] < 1.5 * line, box
    shot(page, f"compare-{device}")
    page.context.close()


@pytest.mark.parametrize("path", ["runs/run/", "runs/document/", "runs/comparisongroup/", "runs/importlog/"])
def test_the_admins_change_lists_fit_the_page(
    browser: Browser, live_server: Any, disputed: Run, admin_user: Any, path: str
) -> None:
    failed: list[str] = []
    page = open_at(browser, WIDTHS["desktop"], f"{live_server.url}/admin/login/?next=/admin/{path}", failed)
    page.get_by_label("Username").fill(admin_user.username)
    page.get_by_label("Password").fill("password")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#site-name")).to_have_text("KernelIndex moderation")
    expect(page.locator("#result_list")).to_be_visible()
    shot(page, f"admin-{path.split('/')[1]}")
    assert no_sideways_scroll(page)
    widths = "(e => [e.scrollWidth, e.clientWidth])(document.querySelector('#changelist .results'))"
    scroll_width, client_width = page.evaluate(widths)
    assert scroll_width <= client_width, (scroll_width, client_width)
    assert failed == []  # its stylesheet and the site's icon answer
    page.context.close()
