"""The API's docs page in Chromium: offline (nothing from another origin is fetched) and under the site's policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).resolve().parent.parent.parent / "test-artifacts"


@pytest.mark.browser
def test_the_docs_page_works_offline_under_the_policy(browser: Any, live_server: Any, transactional_db: None) -> None:
    page = browser.new_page()
    elsewhere: list[str] = []
    problems: list[str] = []

    def only_this_site(route: Any) -> None:
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:  # as on a machine without internet
            elsewhere.append(route.request.url)
            route.abort()

    page.route("**/*", only_this_site)
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.add_init_script(
        "document.addEventListener('securitypolicyviolation', (event) => "
        "console.error(`Content Security Policy violation: ${event.violatedDirective} ${event.blockedURI}`))"
    )

    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="API", exact=True).click()
    page.get_by_role("heading", name="POST /api/v1/runs · Submit runs").wait_for()
    page.locator("#schema-Manifest summary").click()
    page.locator("#schema-Manifest pre").wait_for()
    ARTIFACTS.mkdir(exist_ok=True)
    page.get_by_role("heading", name="GET /api/v1/runs · List runs").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "api-docs.png"))

    assert page.url == f"{live_server.url}/api/v1/docs"
    assert elsewhere == []
    assert problems == []
