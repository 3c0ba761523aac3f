"""Lists page by keyset: every run once, in order, however the pages fall; a cursor cannot be forged."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from attestations.models import Attestation
from runs import figures
from runs.figures import refresh_group_figures
from runs.models import ComparisonGroup, Run
from runs.selectors import get_run_or_404, latency_position, run_rank
from tests.conftest import ImportRuns
from tests.pages import sol_records, write_jsonl
from verification.figures import refresh_run_counters
from verification.models import RerunRequest


@pytest.fixture(autouse=True)
def render_every_request(settings: Any) -> None:
    settings.PAGE_CACHE_SECONDS = 0
    settings.RUNS_PER_PAGE = 4


def every_page(client: Client, url: str) -> list[dict[str, Any]]:
    pages = [client.get(url).json()]
    while pages[-1]["next"]:
        assert len(pages) < 100
        pages.append(client.get(pages[-1]["next"]).json())
    return pages


def leaderboard_group(import_runs: ImportRuns, tmp_path: Path) -> ComparisonGroup:
    """A group with runs in each part of a leaderboard, and ties on latency that pages split."""
    latencies_ms = [0.05, 0.03, 0.03, 0.04, 0.04, 0.04, 0.02, 0.06, 0.06, 0.01, 0.01, 0.07, 0.03, 0.03, 0.05, 0.02]
    records = sol_records(len(latencies_ms))
    for record, latency_ms in zip(records, latencies_ms, strict=True):
        record["latency_ms"] = latency_ms
    for record in records[-3:]:  # completed but incorrect: a latency, never ranked
        record["is_correct"] = False
    for record in records[:2]:  # failed: no latency at all
        record |= {"status": "FAILED", "is_correct": None, "latency_ms": None, "sol_score": None}
    import_runs(write_jsonl(tmp_path / "board.jsonl", records))
    group = ComparisonGroup.objects.get()
    # Two ranked runs a rerun did not reproduce, one of them tied with a ranked run: both after every ranked one.
    demoted = Run.objects.filter(group=group, status="passed").order_by("latency_ns", "run_id")[:3:2]
    Run.objects.filter(pk__in=[run.pk for run in demoted]).update(evidence="not_reproduced")
    refresh_group_figures([group.pk])
    group.refresh_from_db()
    return group


def expected_order(group: ComparisonGroup) -> list[str]:
    def key(run: Run) -> tuple[int, float, str]:
        if run.latency_ns is None:
            return (3, 0.0, run.run_id)
        if not run.is_rankable:
            return (2, run.latency_ns, run.run_id)
        return (1 if run.evidence == "not_reproduced" else 0, run.latency_ns, run.run_id)

    return [run.run_id for run in sorted(Run.objects.filter(group=group, withdrawn_at=None), key=key)]


def test_leaderboard_pages_hold_every_run_once_in_order_not_reproduced_after_the_ranked(
    client: Client, import_runs: ImportRuns, tmp_path: Path
) -> None:
    group = leaderboard_group(import_runs, tmp_path)
    pages = every_page(client, f"{group.get_absolute_url()}.json")
    shown = [run for page in pages for run in page["runs"]]
    assert [run["runId"] for run in shown] == expected_order(group)
    assert [(page["first"], page["last"]) for page in pages] == [(1, 4), (5, 8), (9, 12), (13, 16)]
    # Each rank is the one the run's own page states: the page and the rank follow one order.
    for run in shown:
        assert run["rank"] == run_rank(get_run_or_404(run["runId"])).position, run
    numbered = [run for run in shown if run["rank"] is not None]
    assert [run["evidence"] for run in numbered][-2:] == ["not_reproduced", "not_reproduced"]
    assert numbered[-2]["rank"] == group.ranked_count + 1  # ranked after all the others, not tied with them


@pytest.mark.parametrize("every", [1, 2, 3])
def test_a_rank_counted_from_the_groups_marks_is_the_rank_counted_in_full(
    client: Client, import_runs: ImportRuns, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every: int
) -> None:
    # Marks in a group of a few runs (a large group's are 1,000 apart), so that they fall inside runs of ties.
    monkeypatch.setattr(figures, "RANK_MARKS_FROM", 1)
    monkeypatch.setattr(figures, "RANK_MARK_EVERY", every)
    group = leaderboard_group(import_runs, tmp_path)
    assert len(group.rank_marks) == -(-group.ranked_count // every)
    runs = list(Run.objects.filter(group=group, withdrawn_at=None))
    for run in runs:
        if not run.is_rankable:
            continue
        demoted = run.evidence == "not_reproduced"
        peers = [r for r in runs if r.is_rankable and (r.evidence == "not_reproduced") == demoted]
        faster = sum(r.latency_ns < run.latency_ns for r in peers)  # type: ignore[operator]
        expected = (group.ranked_count if demoted else 0) + faster + 1  # RANK(): ties share the first's number
        assert latency_position(get_run_or_404(run.run_id)) == expected, run
    shown = [run for page in every_page(client, f"{group.get_absolute_url()}.json") for run in page["runs"]]
    for run in shown:
        assert run["rank"] == run_rank(get_run_or_404(run["runId"])).position, run


def test_home_pages_hold_every_run_once_with_dates_tied(
    client: Client, import_runs: ImportRuns, tmp_path: Path
) -> None:
    import_runs(write_jsonl(tmp_path / "runs.jsonl", sol_records(11)))
    Run.objects.update(observed_at=datetime(2026, 5, 1, tzinfo=UTC))  # every run the same date: the run id decides
    pages = every_page(client, "/index.json")
    shown = [run["runId"] for page in pages for run in page["runs"]]
    assert shown == sorted(Run.objects.values_list("run_id", flat=True), reverse=True)
    assert pages[0]["count"] == 11 and pages[0]["start"] is None and pages[1]["start"] is not None


@pytest.mark.parametrize(
    "after",
    ["garbage", "", "a" * 5000, "W10:1abc", "%00", "eyJ9", "WyJuZXdlc3QiLFtdLDAsW11d:forged:signature"],
)
def test_a_cursor_not_made_here_gives_the_first_page(
    client: Client, import_runs: ImportRuns, tmp_path: Path, after: str
) -> None:
    import_runs(write_jsonl(tmp_path / "runs.jsonl", sol_records(6)))
    group = ComparisonGroup.objects.get()
    first = client.get("/index.json").json()
    for url in (
        "/",
        "/index.json",
        group.get_absolute_url(),
        f"{group.get_absolute_url()}.json",
        "/sources/sol-execbench",
    ):
        response = client.get(url, {"after": after, "q": ""} if url == "/" else {"after": after})
        assert response.status_code == 200, url
    assert client.get("/index.json", {"after": after}).json()["runs"] == first["runs"]


def test_an_edited_cursor_is_refused(client: Client, import_runs: ImportRuns, tmp_path: Path) -> None:
    import_runs(write_jsonl(tmp_path / "runs.jsonl", sol_records(9)))
    group = ComparisonGroup.objects.get()
    first = client.get(f"{group.get_absolute_url()}.json").json()
    after = first["next"].split("after=", 1)[1]
    edited = after[:-3] + ("aaa" if not after.endswith("aaa") else "bbb")
    assert client.get(f"{group.get_absolute_url()}.json", {"after": edited}).json()["runs"] == first["runs"]


def test_list_queries_do_not_grow_with_the_runs(client: Client, import_runs: ImportRuns, tmp_path: Path) -> None:
    import_runs(write_jsonl(tmp_path / "few.jsonl", sol_records(5)))
    run = Run.objects.first()
    assert run is not None and run.definition is not None
    group = run.group.get_absolute_url()
    urls = [
        *("/", "/index.json", "/?q=submission", f"/?q={run.run_id[:6]}", run.definition.get_absolute_url()),
        *("/sources/sol-execbench", "/sources/sol-execbench.json", group, f"{group}.json", "/api/v1/runs?limit=200"),
    ]
    small = {url: count_queries(client, url) for url in urls}
    import_runs(write_jsonl(tmp_path / "many.jsonl", sol_records(300, start_id=700_000)))
    for url in urls:
        assert count_queries(client, url) <= small[url], url


def test_a_run_page_asks_for_no_reruns_history_or_notes_the_run_has_not(
    client: Client, import_runs: ImportRuns, tmp_path: Path
) -> None:
    import_runs(write_jsonl(tmp_path / "runs.jsonl", sol_records(3)))
    run = Run.objects.first()
    assert run is not None
    with CaptureQueriesContext(connection) as captured:
        assert client.get(run.get_absolute_url()).status_code == 200
    asked = " ".join(query["sql"] for query in captured.captured_queries)
    assert "runs_evidencechange" not in asked
    assert "attestations_attestation" not in asked
    assert 'WHERE "runs_rerunrequest"."run_id" =' not in asked


def count_queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200, url
    return len(captured)


def test_run_page_queries_stay_flat_as_reruns_and_notes_grow(
    client: Client, import_runs: ImportRuns, tmp_path: Path
) -> None:
    import_runs(write_jsonl(tmp_path / "runs.jsonl", sol_records(3)))
    run = Run.objects.first()
    assert run is not None

    def add(reruns: int, notes: int) -> None:
        for _ in range(reruns):
            RerunRequest.objects.create(run=run, run_digest=run.digest, hardware="nvidia-b200", state="failed")
        Attestation.objects.bulk_create(
            Attestation(run=run, kind="note", body=f"note {n}", status="approved") for n in range(notes)
        )
        refresh_run_counters([run.pk])  # bulk_create sends no signal: as a writer that bypasses them must

    add(reruns=1, notes=1)
    small = count_queries(client, run.get_absolute_url())
    add(reruns=6, notes=30)
    assert count_queries(client, run.get_absolute_url()) == small
