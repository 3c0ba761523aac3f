"""The run page and the leaderboard make the same number of queries at any size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from runs.models import Run
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
