"""Comparison group leaderboards: order, reference rows, the chart, pagination, JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from django.test import Client

from runs.models import ComparisonGroup, Run
from tests.conftest import ImportRuns
from tests.pages import sol_records, visible_text, write_jsonl


def test_sol_leaderboard_follows_the_sources_board(
    client: Client, import_runs: ImportRuns, sample: Path, tmp_path: Path
) -> None:
    # Three extra submissions to kernel 8 whose scores are on the snapshot board, one that is not.
    board = json.loads((sample / "sol-execbench" / "leaderboard.json").read_text())["8"]["scores"]
    records = sol_records(4, kernel_id=8)
    for record, score in zip(records, [board[0], board[5], board[11], 0.12345], strict=True):
        record["sol_score"] = score
    import_runs(sample / "sol-execbench", write_jsonl(tmp_path / "more.jsonl", records))
    group = Run.objects.get(external_id="18134").group
    response = client.get(group.get_absolute_url() + ".json")
    runs = response.json()["runs"]
    assert response.json()["order"] == "source-native"
    ranked = [(run["rank"], run["sourceScore"]) for run in runs if run["rank"] is not None]
    expected = sorted(
        ((1 + sum(s > score for s in board), score) for score in (board[0], board[5], board[11])),
        key=lambda pair: pair[0],
    )
    assert ranked[:1] == [expected[0]]
    assert [rank for rank, _ in ranked] == sorted(rank for rank, _ in ranked)
    assert set(ranked) >= set(expected)
    assert runs[-1]["rank"] is None  # a score the board does not list is not given a source rank


def test_reference_rows_are_shown_but_never_ranked(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "sol-execbench")
    group = Run.objects.get(external_id="18134").group
    response = client.get(group.get_absolute_url())
    text = visible_text(response.content)
    assert "SOL bound" in text
    assert "scoring baseline" in text
    assert "not ranked" in text
    ranks = [run["rank"] for run in client.get(group.get_absolute_url() + ".json").json()["runs"]]
    assert ranks == [6]


def test_the_chart_marks_the_run_and_the_reference_lines(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "sol-execbench")
    run = Run.objects.get(external_id="18134")
    html = client.get(run.group.get_absolute_url() + f"?run={run.run_id}").content.decode()
    assert html.count("<svg") == 2  # latency and the board's SOL scores
    assert 'class="point highlighted"' in html
    assert 'class="rule rule-sol_bound"' in html
    assert 'class="rule rule-scoring_baseline"' in html
    assert 'aria-current="true"' in html


def test_every_other_point_of_the_chart_links_to_its_run(
    client: Client, import_runs: ImportRuns, tmp_path: Path
) -> None:
    import_runs(write_jsonl(tmp_path / "five.jsonl", sol_records(5)))
    highlighted, *others = Run.objects.order_by("latency_ns")
    html = client.get(f"{highlighted.group.get_absolute_url()}?run={highlighted.run_id}").content.decode()
    for run in others:
        assert f'<a href="/runs/{run.run_id}"><circle class="point" ' in html
    assert f"<title>{others[0].run_id}: 21.0 µs</title>" in html
    assert f'<a href="/runs/{highlighted.run_id}"><circle' not in html  # the highlighted run is this page's subject


def test_kernelindex_order_ranks_by_latency_and_pages(
    client: Client, import_runs: ImportRuns, sample: Path, settings: object
) -> None:
    import_runs(sample / "kernelbench")
    group = Run.objects.filter(source="kernelbench").first().group  # type: ignore[union-attr]
    payload = client.get(group.get_absolute_url() + ".json").json()
    latencies = [run["latencyNs"] for run in payload["runs"]]
    assert latencies == sorted(latencies)
    assert [run["rank"] for run in payload["runs"]] == [1, 2]
    assert payload["order"] == "latency"


def test_a_long_leaderboard_is_paginated(
    client: Client, import_runs: ImportRuns, tmp_path: Path, settings: object
) -> None:
    import_runs(write_jsonl(tmp_path / "many.jsonl", sol_records(120)))
    group = ComparisonGroup.objects.get()
    first = client.get(group.get_absolute_url() + ".json").json()
    second = client.get(first["next"]).json()
    assert first["count"] == 120
    assert (first["first"], first["last"], second["first"], second["last"]) == (1, 50, 51, 100)
    assert [r["rank"] for r in second["runs"]][:2] == [51, 52]
    assert client.get(second["next"]).json()["next"] is None
    after = first["next"].split("after=", 1)[1]
    htmx = client.get(group.get_absolute_url() + f"?after={after}", headers={"HX-Request": "true"})
    assert htmx.content.decode().lstrip().startswith('<div id="leaderboard">')
    assert "Runs 51–100 of 120" in htmx.content.decode()


def test_ties_share_a_rank_across_pages_and_unranked_runs_come_last(
    client: Client, import_runs: ImportRuns, tmp_path: Path, settings: Any
) -> None:
    settings.RUNS_PER_PAGE = 4
    latencies_ms = [0.05, 0.03, 0.03, 0.04, 0.04, 0.04, 0.02, 0.06, 0.06, 0.01, 0.01, 0.07]
    records = sol_records(len(latencies_ms))
    for record, latency_ms in zip(records, latencies_ms, strict=True):
        record["latency_ms"] = latency_ms
    for record in records[-3:]:  # completed but incorrect: never ranked, however fast
        record["is_correct"] = False
    import_runs(write_jsonl(tmp_path / "ties.jsonl", records))
    group = ComparisonGroup.objects.get()

    pages = [client.get(f"{group.get_absolute_url()}.json").json()]
    while pages[-1]["next"]:
        pages.append(client.get(pages[-1]["next"]).json())
    ranks = [[run["rank"] for run in page["runs"]] for page in pages]
    assert ranks == [[1, 2, 2, 4], [4, 4, 7, 8], [8, None, None, None]]
    unranked = [run["latencyNs"] for run in pages[2]["runs"][1:]]
    assert unranked == sorted(unranked)  # the runs it cannot rank, fastest first
    html = client.get(pages[1]["next"].replace(".json?", "?")).content.decode()  # the third page, as HTML
    assert re.findall(r'<td class="num rank"[^>]*>([^<]*)</td>', html) == ["8", "—", "—", "—"]


def test_an_unknown_group_is_a_404(client: Client, db: None) -> None:
    assert client.get("/groups/sha256:" + "0" * 64).status_code == 404
