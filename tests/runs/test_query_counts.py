"""The run page and the leaderboard make the same number of queries at any size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from runs.models import ComparisonGroup, Run
from tests.conftest import ImportRuns
from tests.pages import queries_for, sol_records, write_jsonl


@pytest.fixture(autouse=True)
def render_every_request(settings: Any) -> None:
    """These count what rendering a page costs; a page served from the cache makes no query at all."""
    settings.PAGE_CACHE_SECONDS = 0


def add_notes(run: Run, count: int) -> None:
    from attestations.models import Attestation

    Attestation.objects.bulk_create(
        Attestation(run=run, kind="note", body=f"note {i}", status="approved", gpu="NVIDIA B200") for i in range(count)
    )


def grow(import_runs: ImportRuns, tmp_path: Path, runs: int, versions: int) -> None:
    """A group of `runs` runs; the first run changed `versions` times at the source."""
    records = sol_records(runs)
    import_runs(write_jsonl(tmp_path / f"runs-{runs}.jsonl", records))
    for version in range(versions):
        changed: list[dict[str, Any]] = [records[0] | {"avg_speedup": 1.0 + version}]
        import_runs(write_jsonl(tmp_path / f"v{version}.jsonl", changed))


def test_run_page_queries_do_not_grow(client: Client, import_runs: ImportRuns, tmp_path: Path) -> None:
    grow(import_runs, tmp_path, runs=3, versions=1)
    run = Run.objects.order_by("latency_ns").last()
    assert run is not None
    add_notes(run, 1)
    small = queries_for(client, run.get_absolute_url())
    grow(import_runs, tmp_path, runs=150, versions=6)
    add_notes(run, 40)
    assert queries_for(client, run.get_absolute_url()) == small


def test_leaderboard_queries_do_not_grow(client: Client, import_runs: ImportRuns, tmp_path: Path, sample: Path) -> None:
    import_runs(sample / "sol-execbench" / "leaderboard.json")
    grow(import_runs, tmp_path, runs=3, versions=0)
    group = Run.objects.first().group  # type: ignore[union-attr]
    url = group.get_absolute_url() + f"?run={Run.objects.first().run_id}"  # type: ignore[union-attr]
    small = queries_for(client, url)
    grow(import_runs, tmp_path, runs=150, versions=0)
    # A short leaderboard reads each of its parts (runs.selectors.latency_order); a full page may need fewer.
    assert queries_for(client, url) <= small
    assert json.loads(client.get(group.get_absolute_url() + ".json").content)["count"] == 150


def test_run_page_asks_for_nothing_the_run_does_not_have(
    client: Client, import_runs: ImportRuns, tmp_path: Path
) -> None:
    from attestations.models import IssueReport

    grow(import_runs, tmp_path, runs=3, versions=0)
    run = Run.objects.order_by("latency_ns").first()
    assert run is not None
    with CaptureQueriesContext(connection) as captured:
        assert client.get(run.get_absolute_url()).status_code == 200
    tables = " ".join(query["sql"] for query in captured.captured_queries)
    # One version, no reruns, no evidence changes, no notes, no issue reports, and not a rerun's result: none
    # is asked for.
    unasked = ("runs_runversion", "runs_rerunrequest", "runs_evidencechange")
    for table in (*unasked, "attestations_attestation", "attestations_issuereport"):
        assert table not in tables, table
    IssueReport.objects.create(run=run, category="other", body="the figures look off")
    with CaptureQueriesContext(connection) as captured:
        html = client.get(run.get_absolute_url()).content.decode()
    assert "Reported issues" in html
    assert sum("attestations_issuereport" in query["sql"] for query in captured.captured_queries) == 1


def test_run_page_lists_versions_only_of_a_run_the_source_changed(
    client: Client, import_runs: ImportRuns, tmp_path: Path
) -> None:
    records = sol_records(2)
    import_runs(write_jsonl(tmp_path / "runs.jsonl", records))
    import_runs(write_jsonl(tmp_path / "changed.jsonl", [records[0] | {"avg_speedup": 3.0}]))
    changed = Run.objects.get(version_count=2)
    unchanged = Run.objects.get(version_count=1)
    with CaptureQueriesContext(connection) as captured:
        html = client.get(changed.get_absolute_url()).content.decode()
    assert "The source changed this record: 2 versions" in html
    assert sum("runs_runversion" in query["sql"] for query in captured.captured_queries) == 1
    with CaptureQueriesContext(connection) as captured:
        html = client.get(unchanged.get_absolute_url()).content.decode()
    assert "The source changed this record" not in html
    assert not any("runs_runversion" in query["sql"] for query in captured.captured_queries)


@pytest.mark.parametrize("board", [False, True], ids=["latency-order", "source-order"])
def test_a_list_pages_queries_do_not_depend_on_how_many_rows_it_shows(
    client: Client, import_runs: ImportRuns, tmp_path: Path, settings: Any, board: bool
) -> None:
    """A list loads only some of each run's fields (RunQuerySet.for_lists): a row that read another one would
    make a query of its own, and a page of 40 rows would make more queries than a page of 2."""
    import_runs(write_jsonl(tmp_path / "runs.jsonl", sol_records(45)))
    run = Run.objects.first()
    assert run is not None
    Run.objects.filter(pk=run.pk).update(on_public_board=False)  # a private one: its leaderboard row says so
    if board:  # ranked as the source's board ranks them (runs.selectors.source_order)
        ComparisonGroup.objects.filter(pk=run.group_id).update(native_order="sol_score")
        for rank, pk in enumerate(Run.objects.exclude(pk=run.pk).values_list("pk", flat=True), start=1):
            Run.objects.filter(pk=pk).update(source_rank=rank)
    group = run.group.get_absolute_url()
    urls = [
        *("/", "/index.json", "/?q=submission", "/sources/sol-execbench", "/sources/sol-execbench.json"),
        *(group, f"{group}.json", "/api/v1/runs"),
    ]
    settings.RUNS_PER_PAGE = 2
    for url in urls:  # the leaderboard's chart is then a fragment in the cache, whatever the page's size
        client.get(url)
    few = {url: queries_for(client, url) for url in urls}
    settings.RUNS_PER_PAGE = 40
    assert {url: queries_for(client, url) for url in urls} == few
