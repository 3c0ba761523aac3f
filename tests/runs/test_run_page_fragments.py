"""Fragments kept between renders. The run page's sections drawn from its documents alone are kept by the run's
digest: a page rendered again (after a write retired it) shows the same sections without building them again, and
a new release or a document stored later builds them anew. A leaderboard's latency chart is kept until a write
retires its group."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from runs import pages
from runs.models import ComparisonGroup, Document, Run
from runs.services import withdraw_run
from tests.conftest import ImportRuns
from tests.pages import sol_records, write_jsonl

SECTIONS = ('id="measurements"', 'id="protocol"', 'id="environment"', 'id="artifacts"')


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch, settings: Any) -> list[str]:
    """The runs whose manifest section was built (not read from the cache), in order."""
    settings.PAGE_CACHE_SECONDS = 0  # every request renders the page
    seen: list[str] = []
    original = pages.pretty_manifest

    def counted(run: Run, documents: dict[str, Document]) -> str:
        seen.append(run.run_id)
        return original(run, documents)

    monkeypatch.setattr(pages, "pretty_manifest", counted)
    return seen


def document_sections(client: Client, run: Run) -> str:
    """The run page's sections drawn from its documents, and its manifest viewer as the page fetches it."""
    html = client.get(run.get_absolute_url()).content.decode()
    assert all(section in html for section in SECTIONS)
    viewer = client.get(reverse("runs:manifest", args=[run.run_id]), headers={"HX-Request": "true"})
    return html[html.index('<section id="measurements"') : html.index('<section id="notes"')] + viewer.content.decode()


def test_a_page_rendered_again_reads_its_document_sections_from_the_cache(
    client: Client, demo: Callable[[str], Run], built: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = demo("softmax-exp2")
    first = document_sections(client, run)
    assert built == [run.run_id]
    assert document_sections(client, run) == first and built == [run.run_id]
    other = demo("rmsnorm-row-loop")
    document_sections(client, other)
    assert built == [run.run_id, other.run_id]  # keyed by each run's own digest
    # A deploy may change how the sections are drawn: its pages build them anew.
    monkeypatch.setattr(pages, "release_id", lambda: "the next release")
    assert document_sections(client, run) == first
    assert built == [run.run_id, other.run_id, run.run_id]


def test_the_run_page_leaves_its_manifest_to_the_viewer_which_fetches_it_when_opened(
    client: Client, demo: Callable[[str], Run], built: list[str]
) -> None:
    run = demo("softmax-exp2")
    html = client.get(run.get_absolute_url()).content.decode()
    url = reverse("runs:manifest", args=[run.run_id])
    viewer = html[html.index('<section id="manifest"') : html.index("</section>", html.index('<section id="manifest"'))]
    assert built == [] and 'id="manifest-json"' not in html
    assert f'hx-get="{url}"' in viewer and 'hx-trigger="toggle once"' in viewer
    assert f'<a href="{url}">Open the manifest' in viewer  # without JavaScript, the link
    # Its own page, for the link: the whole manifest under the site's frame; the fragment alone for htmx.
    page = client.get(url).content.decode()
    fragment = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "<h1>Canonical manifest of run" in page and '"kind": "BenchmarkRun"' in html_text(page)
    assert fragment.lstrip().startswith('<div id="manifest-body">') and "<h1>" not in fragment
    start = fragment.index('<code id="manifest-json">')
    code = fragment[start : fragment.index("</code>", start)]
    manifest, twin = json.loads(html_text(code)), client.get(f"{run.get_absolute_url()}.json").json()
    assert manifest and all(twin[member] == value for member, value in manifest.items())  # the twin's manifest


def test_a_withdrawn_runs_manifest_answers_410_and_is_still_shown(
    client: Client, demo: Callable[[str], Run], django_capture_on_commit_callbacks: Any
) -> None:
    run = demo("softmax-exp2")
    with django_capture_on_commit_callbacks(execute=True):
        withdraw_run(run, "Submitted twice.")
    response = client.get(reverse("runs:manifest", args=[run.run_id]))
    assert response.status_code == 410
    assert "Withdrawn on" in response.content.decode() and 'id="manifest-json"' in response.content.decode()


def html_text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def test_a_document_stored_later_shows_at_once(client: Client, demo: Callable[[str], Run], built: list[str]) -> None:
    run = demo("softmax-exp2")
    implementation = Document.objects.get(digest=run.implementation_digest)
    Document.objects.filter(digest=implementation.digest).delete()
    listed = '<span class="role">implementation</span>'
    assert listed not in document_sections(client, run)
    Document.objects.create(
        digest=implementation.digest,
        kind=implementation.kind,
        name=implementation.name,
        canonical=implementation.canonical,
    )
    assert listed in document_sections(client, run) and len(built) == 2


def test_a_leaderboards_chart_is_drawn_once_until_a_write_retires_its_group(
    client: Client,
    import_runs: ImportRuns,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.PAGE_CACHE_SECONDS = 0
    import_runs(write_jsonl(tmp_path / "many.jsonl", sol_records(60)))
    group = ComparisonGroup.objects.get()
    drawn: list[str] = []
    original = pages._latency_chart

    def counted(*args: Any) -> Any:
        drawn.append(group.key)
        return original(*args)

    monkeypatch.setattr(pages, "_latency_chart", counted)
    first = client.get(group.get_absolute_url()).content.decode()
    cursor = client.get(group.get_absolute_url() + ".json").json()["next"].split("after=", 1)[1]
    second = client.get(f"{group.get_absolute_url()}?after={cursor}").content.decode()
    assert chart(first) == chart(second) and len(drawn) == 1  # the same chart on every page, drawn once
    fastest = Run.objects.order_by("latency_ns").first()
    assert fastest is not None and f"/runs/{fastest.run_id}" in chart(first)
    with django_capture_on_commit_callbacks(execute=True):  # pages are retired once the write commits
        withdraw_run(fastest, "Submitted twice.")
    after = client.get(group.get_absolute_url()).content.decode()
    assert len(drawn) == 2 and f"/runs/{fastest.run_id}" not in chart(after)


def chart(html: str) -> str:
    return html[html.index('<figure class="chart">') : html.index("</figure>")]
