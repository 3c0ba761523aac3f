"""A visitor's walk through the site in headless Chromium, with JavaScript on and off.

home → search → definition → leaderboard → run → compare with #1 → show manifest → cite.
Screenshots of every step are kept in test-artifacts/browser/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.conftest import SAMPLE_DATA, ImportRuns

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "browser"
pytestmark = pytest.mark.browser


class Walk:
    def __init__(self, page: Page, name: str) -> None:
        self.page = page
        self.name = name
        self.step = 0
        ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def shot(self, label: str) -> None:
        self.step += 1
        self.page.screenshot(path=ARTIFACTS / f"{self.name}-{self.step:02d}-{label}.png", full_page=True)


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_a_visitor_walks_from_search_to_citation(
    browser: Browser, live_server: object, import_runs: ImportRuns, javascript: bool
) -> None:
    import_runs(SAMPLE_DATA / "kernelbench", SAMPLE_DATA / "sol-execbench")
    context = browser.new_context(java_script_enabled=javascript, viewport={"width": 1200, "height": 900})
    if javascript:
        context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    walk = Walk(page, "js" if javascript else "no-js")
    base = str(live_server)

    page.goto(base + "/")
    expect(page.get_by_role("heading", name="GPU kernel benchmark runs")).to_be_visible()
    walk.shot("home")

    page.get_by_label("Search").fill("1_Square_matrix")
    page.get_by_role("button", name="Search").click()
    results = page.locator("#results")
    expect(results).to_contain_text("2 runs match")
    walk.shot("search")

    results.get_by_role("link", name="Square matrix multiplication").first.click()
    expect(page.get_by_role("heading", name="Square matrix multiplication")).to_be_visible()
    walk.shot("definition")

    page.get_by_role("link", name="All results →").click()
    expect(page.get_by_role("heading", name="All results for Square matrix multiplication")).to_be_visible()
    expect(page.locator("figure.chart svg")).to_be_visible()
    walk.shot("leaderboard")

    second = page.locator("table.leaderboard tbody tr").nth(1)
    expect(second.locator("td").first).to_have_text("2")
    second.get_by_role("link").first.click()
    expect(page.locator(".headline")).to_contain_text("Rank 2 in its comparison group · KernelIndex comparison")
    run_url = page.url
    walk.shot("run")

    page.get_by_role("link", name="Compare with #1 →").click()
    expect(page.locator("h1")).to_contain_text("Compare")
    expect(page.locator(".notice")).to_contain_text("same comparison group")
    walk.shot("compare")

    page.goto(run_url)
    manifest = page.locator("#manifest-json")
    expect(manifest).to_have_count(0)  # fetched when the viewer is opened
    page.get_by_text("Show manifest").click()
    if not javascript:  # the viewer holds a link to the manifest's own page
        page.get_by_role("link", name=re.compile("Open the manifest")).click()
        expect(page.locator("h1")).to_contain_text("Canonical manifest of run")
    expect(manifest).to_be_visible()
    expect(manifest).to_contain_text('"kind": "BenchmarkRun"')
    walk.shot("manifest")
    if javascript:
        page.get_by_role("button", name="Copy manifest").click()
        assert '"kind": "BenchmarkRun"' in page.evaluate("navigator.clipboard.readText()")
    else:
        page.go_back()

    page.get_by_text("Show citation").click()
    bibtex = page.locator("#cite-bibtex")
    expect(bibtex).to_be_visible()
    expect(bibtex).to_contain_text("@misc{kernelindex-")
    if javascript:
        page.get_by_role("button", name="Copy BibTeX").click()
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied.startswith("@misc{kernelindex-")
    walk.shot("cite")
    context.close()
