"""The evidence badge at /runs/<id>/badge.svg: valid SVG, coloured by level, retired with the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from django.conf import settings
from django.test import Client
from playwright.sync_api import Browser

from runs.badges import EVIDENCE_COLOURS, WITHDRAWN_COLOUR
from runs.models import Run
from runs.services import withdraw_run
from tests.pages import visible_text

SVG = "{http://www.w3.org/2000/svg}"
ARTIFACTS = Path(__file__).resolve().parent.parent.parent / "test-artifacts"


def badge(client: Client, run: Run) -> tuple[int, ElementTree.Element]:
    response = client.get(f"/runs/{run.run_id}/badge.svg")
    assert response["Content-Type"] == "image/svg+xml"
    return response.status_code, ElementTree.fromstring(response.content)


def fills(root: ElementTree.Element) -> list[str]:
    return [rect.get("fill", "") for rect in root.iter(f"{SVG}rect")]


def test_the_badge_is_valid_svg_with_the_level_and_the_figure(client: Client, run: Run) -> None:
    status, root = badge(client, run)
    assert status == 200
    assert root.tag == f"{SVG}svg"
    title = root.find(f"{SVG}title")
    assert title is not None and title.text is not None
    assert title.text.startswith("KernelIndex: Reported · ")
    assert "µs" in title.text
    texts = [text.text for text in root.iter(f"{SVG}text")]
    assert texts[0] == "KernelIndex"
    assert texts[1] == title.text.removeprefix("KernelIndex: ")


def test_the_colour_follows_the_evidence_level(
    client: Client, run: Run, django_capture_on_commit_callbacks: Any
) -> None:
    _, root = badge(client, run)
    assert EVIDENCE_COLOURS[Run.Evidence.REPORTED] in fills(root)
    # A rerun's verdict retires the run's pages (web/scopes.py: RERUN_VERDICT); the badge is one of them.
    from web.scopes import RERUN_VERDICT

    for level in (Run.Evidence.REPRODUCED, Run.Evidence.NOT_REPRODUCED):
        Run.objects.filter(pk=run.pk).update(evidence=level)
        RERUN_VERDICT.retire_now(run)
        _, root = badge(client, run)
        assert EVIDENCE_COLOURS[level] in fills(root)
        assert Run.Evidence(level).label in (root.findtext(f"{SVG}title") or "")
    assert len(set(EVIDENCE_COLOURS.values())) == 3


def test_a_withdrawn_runs_badge_is_gone_with_it(
    client: Client, run: Run, django_capture_on_commit_callbacks: Any
) -> None:
    assert badge(client, run)[0] == 200  # cached now
    with django_capture_on_commit_callbacks(execute=True):
        withdraw_run(run, "Submitted twice.")
    status, root = badge(client, run)
    assert status == 410
    assert WITHDRAWN_COLOUR in fills(root)
    assert "withdrawn" in (root.findtext(f"{SVG}title") or "")


def test_text_in_the_badge_is_escaped(client: Client, run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(primary_statistic='<mean&"')
    _, root = badge(client, run)
    assert '<mean&"' in (root.findtext(f"{SVG}title") or "")


def test_an_unknown_runs_badge_is_404(client: Client, db: None) -> None:
    assert client.get("/runs/0123456789ab/badge.svg").status_code == 404


def test_the_run_page_shows_how_to_embed_it(client: Client, run: Run) -> None:
    text = visible_text(client.get(run.get_absolute_url()).content)
    permalink = f"{settings.SITE_URL}/runs/{run.run_id}"
    assert f"[![KernelIndex evidence]({permalink}/badge.svg)]({permalink})" in text
    assert f'<img src="{permalink}/badge.svg" alt="KernelIndex evidence">' in text


@pytest.mark.browser
def test_the_badge_renders_in_chromium(browser: Browser, live_server: Any, run: Run) -> None:
    page = browser.new_page()
    page.goto(f"{live_server}{run.get_absolute_url()}")
    image = page.locator("details.badge-embed img")
    page.locator("details.badge-embed summary").click()
    image.wait_for(state="visible")
    width = page.evaluate("img => img.decode().then(() => img.naturalWidth)", image.element_handle())
    assert width > 0
    ARTIFACTS.mkdir(exist_ok=True)
    image.screenshot(path=ARTIFACTS / "badge.png")
    page.close()
