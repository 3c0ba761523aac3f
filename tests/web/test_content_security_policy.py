"""A Content-Security-Policy without 'unsafe-inline' on every page, and pages that need nothing inline.

The browser test loads pages with the policy active and listens for violations,
so htmx (forms fetched on demand, the leaderboard) is shown to work under it.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from runs.models import Run
from tests.conftest import SAMPLE_DATA, ImportRuns
from tests.pages import HTMX


class InlineCode(HTMLParser):
    """Collects what a policy without 'unsafe-inline' would block: inline scripts, styles and handlers."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.in_inline_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        if tag == "style":
            self.found.append("<style>")
        if tag == "script" and "src" not in names and names.get("type") != "application/json":
            self.in_inline_script = True
        for name, _ in attrs:
            if name == "style" or name.startswith("on"):
                self.found.append(f"<{tag} {name}=…>")

    def handle_endtag(self, tag: str) -> None:
        self.in_inline_script = False

    def handle_data(self, data: str) -> None:
        if self.in_inline_script and data.strip():
            self.found.append(f"<script>{data.strip()[:40]}")


def inline_code(html: bytes) -> list[str]:
    parser = InlineCode()
    parser.feed(html.decode())
    return parser.found


def test_every_page_has_the_policy_and_nothing_inline(every_url: list[str], admin_client: Client) -> None:
    pages = [url for url in every_url if not url.startswith("/admin/")]
    found: dict[str, list[str]] = {}
    for url in pages:
        for response in (Client().get(url), Client().get(url, headers=HTMX)):
            policy = response["Content-Security-Policy"]
            assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy
            assert "script-src 'self'" in policy and "style-src 'self'" in policy
            if response["Content-Type"].startswith("text/html") and (inline := inline_code(response.content)):
                found[url] = inline
    for url in ("/admin/", "/admin/runs/run/", "/admin/attestations/attestation/"):
        response = admin_client.get(url)
        assert "'unsafe-inline'" not in response["Content-Security-Policy"]
    assert Client().get("/no/such/page")["Content-Security-Policy"]
    assert found == {}


@pytest.mark.browser
def test_pages_work_under_the_policy_in_a_browser(
    browser: Any, live_server: Any, import_runs: ImportRuns, transactional_db: None
) -> None:
    import_runs(SAMPLE_DATA / "sol-execbench")
    run = Run.objects.filter(group__isnull=False).order_by("run_id").first()
    assert run is not None and run.group is not None
    page = browser.new_page()
    problems: list[str] = []
    page.on(
        "console", lambda message: problems.append(message.text) if "Content Security Policy" in message.text else None
    )
    page.add_init_script(
        "document.addEventListener('securitypolicyviolation', (event) => "
        "console.error(`Content Security Policy violation: ${event.violatedDirective} ${event.blockedURI}`))"
    )

    response = page.goto(f"{live_server.url}/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.get_by_label("Search").fill(run.run_id)
    page.locator("#results").get_by_text(run.run_id).first.wait_for()

    page.goto(f"{live_server.url}{run.get_absolute_url()}")
    page.locator("summary", has_text="Add a reproduction or note").click()
    page.locator("#note-form form").wait_for()  # fetched by htmx when the summary opened
    page.locator("summary", has_text="Report an issue with this run").click()
    page.locator("#report-form form").wait_for()

    page.goto(f"{live_server.url}{run.group.get_absolute_url()}")
    page.locator("figure.chart svg").first.wait_for()
    htmx_styles = page.evaluate("[...document.querySelectorAll('style')].length")

    # The admin too: Django's admin templates carry no inline code either.
    User.objects.create_superuser("moderator", password="a long passphrase for tests")
    page.goto(f"{live_server.url}/admin/login/")
    page.get_by_label("Username").fill("moderator")
    page.get_by_label("Password").fill("a long passphrase for tests")
    page.get_by_role("button", name="Log in").click()
    page.get_by_text("Site administration").wait_for()
    page.goto(f"{live_server.url}/admin/runs/run/{run.pk}/change/")
    page.get_by_text("Moderation history").wait_for()

    assert problems == []
    assert htmx_styles == 0
