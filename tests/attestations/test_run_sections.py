"""The run page's "Replications and notes" and "Report an issue" sections, as the run page includes them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.template.loader import render_to_string
from django.test import RequestFactory
from django.utils import timezone
from pytest_django import DjangoAssertNumQueries

from attestations.models import Attestation
from attestations.selectors import approved_attestations, count_attestations
from runs.models import Run
from tests.pages import visible_text

NEVER_CHANGES = (
    "Community attestations. They never change the evidence level; only a KernelIndex-controlled rerun does."
)


def render_section(name: str, run: Run, rf: RequestFactory) -> str:
    """Render a partial with exactly the context the run page gives it: the run, as stored (its note count)."""
    run.refresh_from_db()
    context: dict[str, Any] = {"run": run}
    return render_to_string(f"attestations/run_sections.html#{name}", context, request=rf.get(run.get_absolute_url()))


def attest(run: Run, days_ago: int = 0, **fields: Any) -> Attestation:
    values: dict[str, Any] = {
        "kind": "reproduction",
        "outcome": "reproduced",
        "status": "approved",
        "gpu": "NVIDIA H100",
    }
    attestation = Attestation.objects.create(run=run, **(values | fields))
    Attestation.objects.filter(pk=attestation.pk).update(created_at=timezone.now() - timedelta(days=days_ago))
    return attestation


def test_with_no_attestations_the_section_says_so(run: Run, rf: RequestFactory) -> None:
    html = render_section("notes", run, rf)
    assert html.strip().startswith('<section id="notes"')
    text = visible_text(html)
    assert text.startswith("Replications and notes")
    assert "No attestations yet." in text
    assert NEVER_CHANGES in text
    assert "<summary>Add a reproduction or note</summary>" in html
    # Collapsed until someone opens it; then htmx fetches the form, or without JavaScript the link leads to it.
    assert f'<details hx-get="/runs/{run.run_id}/notes" hx-trigger="toggle once"' in html
    assert f'<a href="/runs/{run.run_id}/notes">' in html
    assert "csrfmiddlewaretoken" not in html


def test_approved_attestations_are_shown_newest_first(run: Run, rf: RequestFactory) -> None:
    attest(
        run, days_ago=3, outcome="not_reproduced", measured_latency_ns=2_660_000, author_name="Grace", body="Slower."
    )
    attest(run, days_ago=1, measured_latency_ns=181_200, gpu="NVIDIA H100 80GB HBM3", author_name="Ada")
    attest(run, days_ago=0, kind="note", outcome="", gpu="", body="The cases changed in v1.1.")
    attest(run, status="pending", body="Pending words")
    attest(run, status="rejected", body="Rejected words")

    text = visible_text(render_section("notes", run, rf))
    assert "No attestations yet." not in text
    assert "Pending words" not in text and "Rejected words" not in text
    assert "2 reproductions (1 reproduced, 1 not reproduced) · 1 note" in text
    assert text.index("The cases changed") < text.index("Ada") < text.index("Grace")
    day = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%d")
    assert f"Reproduction reproduced · Ada · {day} measured latency 181.2 µs gpu NVIDIA H100 80GB HBM3" in text
    assert "not reproduced · Grace" in text and "measured latency 2.66 ms" in text
    assert "Note · anonymous" in text
    assert NEVER_CHANGES in text


def test_what_people_typed_is_escaped(run: Run, rf: RequestFactory) -> None:
    attest(
        run,
        author_name='<img src=x onerror="alert(1)">',
        gpu="<b>H100</b>",
        body="<script>alert('x')</script>\nsecond line",
    )
    html = render_section("notes", run, rf)
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>H100" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;<br>second line" in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html


def test_the_contact_email_is_never_shown(run: Run, rf: RequestFactory, client: Any) -> None:
    attest(run, contact_email="private@example.org")
    assert "private@example.org" not in render_section("notes", run, rf)
    assert "private@example.org" not in client.get(run.get_absolute_url()).content.decode()


def test_the_report_section(run: Run, rf: RequestFactory) -> None:
    html = render_section("report", run, rf)
    assert html.strip().startswith('<section id="report"')
    assert "<summary>Report an issue with this run</summary>" in html
    assert f'<details hx-get="/runs/{run.run_id}/report" hx-trigger="toggle once"' in html
    assert f'<a href="/runs/{run.run_id}/report">' in html


def test_the_sections_cost_one_query(
    run: Run, rf: RequestFactory, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    for days in range(5):
        attest(run, days_ago=days)
    with django_assert_num_queries(1):
        attestations = approved_attestations(run)
    with django_assert_num_queries(0):
        assert count_attestations(attestations).reproductions == 5
    run.refresh_from_db()
    # The section reads its notes itself (attestations' run_notes tag): that one query, and none for the counts.
    with django_assert_num_queries(1):
        html = render_to_string("attestations/run_sections.html#notes", {"run": run}, request=rf.get("/"))
    assert "5 reproductions (5 reproduced)" in html


def test_the_run_page_includes_both_sections(client: Any, run: Run) -> None:
    attest(run, body="Seen on the run page.")
    html = client.get(run.get_absolute_url()).content.decode()
    assert 'id="notes"' in html and 'id="report"' in html
    assert "Seen on the run page." in html
