"""Search: what a query matches comes most relevant first, then newest first, each run once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from runs import pages, search
from runs.models import Definition, Run
from tests.conftest import ImportRuns
from tests.pages import sol_records, write_jsonl


@pytest.fixture
def runs(import_runs: ImportRuns, tmp_path: Path, settings: Any) -> list[Run]:
    """Ten runs observed a day apart, the newest last."""
    settings.PAGE_CACHE_SECONDS = 0
    import_runs(write_jsonl(tmp_path / "runs.jsonl", sol_records(10)))
    stored = list(Run.objects.order_by("external_id"))
    for day, run in enumerate(stored):
        run.observed_at = datetime(2026, 5, 1, tzinfo=UTC) + timedelta(days=day)
        run.save(update_fields=["observed_at"])
    return stored


def found(client: Client, query: str) -> list[str]:
    response = client.get("/index.json", {"q": query})
    assert response.status_code == 200
    return [run["runId"] for run in response.json()["runs"]]


@pytest.mark.parametrize("listed", [0, 20], ids=["definitions-by-subquery", "definitions-by-id"])
def test_results_come_by_relevance_then_date(
    client: Client, runs: list[Run], monkeypatch: pytest.MonkeyPatch, listed: int
) -> None:
    monkeypatch.setattr(search, "LISTED_DEFINITIONS", listed)
    named = Definition.objects.create(source="sol-execbench", name="zeta", title="Zeta")
    Run.objects.filter(pk__in=[runs[1].pk, runs[2].pk]).update(definition=named)  # a definition named "zeta"
    Run.objects.filter(pk=runs[0].pk).update(implementation_name="ZETA")  # an implementation named "zeta"
    Run.objects.filter(pk=runs[8].pk).update(implementation_name="zeta-fused")  # a name holding "zeta"
    Run.objects.filter(pk=runs[9].pk).update(project="the zeta project")  # a project holding it
    # Definitions whose name holds it, after the one named it exactly.
    partly = Definition.objects.create(source="sol-execbench", name="zeta_backward", title="Zeta backward")
    Run.objects.filter(pk__in=[runs[4].pk, runs[5].pk]).update(definition=partly)
    ids = [run.run_id for run in runs]
    assert found(client, "Zeta") == [ids[2], ids[1], ids[0], ids[5], ids[4], ids[9], ids[8]]


@pytest.mark.parametrize("per_page", [1, 2, 3, 4, 6, 7])
@pytest.mark.parametrize("bound", [2, 5, 1000])
def test_every_page_of_results_states_how_many_match_up_to_the_bound(
    client: Client, runs: list[Run], settings: Any, monkeypatch: pytest.MonkeyPatch, per_page: int, bound: int
) -> None:
    """The count beside a page of results, whichever page and whichever part of the matches its runs come
    from: the first page counts only the parts from its last run's on (runs.pages.list_size)."""
    settings.RUNS_PER_PAGE = per_page
    monkeypatch.setattr(pages, "COUNT_BOUND", bound)
    monkeypatch.setattr(search.bounded_count, "__defaults__", (bound,))
    named = Definition.objects.create(source="sol-execbench", name="zeta", title="Zeta")
    Run.objects.filter(pk__in=[runs[1].pk, runs[2].pk]).update(definition=named)
    Run.objects.filter(pk=runs[0].pk).update(implementation_name="ZETA")
    Run.objects.filter(pk__in=[runs[7].pk, runs[8].pk]).update(implementation_name="zeta-fused")
    Run.objects.filter(pk=runs[9].pk).update(project="the zeta project")
    matching = 6
    url = "/index.json?q=zeta"
    while url:
        page = client.get(url).json()
        if page["next"]:
            assert (page["count"], page["countIsLowerBound"]) == (
                (bound, True) if matching > bound else (matching, False)
            ), url
        else:
            assert page["count"] == matching
        url = page["next"]


def test_a_run_id_or_its_prefix_finds_that_run_first(client: Client, runs: list[Run]) -> None:
    target = runs[3]
    assert found(client, target.run_id) == [target.run_id]
    assert found(client, target.run_id[:6].upper())[0] == target.run_id
    assert found(client, target.external_id) == [target.run_id]


def test_a_run_matching_twice_is_listed_once(client: Client, runs: list[Run]) -> None:
    named = Definition.objects.create(source="sol-execbench", name="omega", title="Omega")
    Run.objects.filter(pk=runs[0].pk).update(definition=named, implementation_name="omega")
    assert found(client, "omega") == [runs[0].run_id]


def test_a_word_nowhere_finds_nothing_and_a_letter_finds_definitions_holding_it(
    client: Client, runs: list[Run]
) -> None:
    assert found(client, "zebrafish") == []
    payload = client.get("/index.json", {"q": "x"}).json()
    assert payload["count"] == 10  # the kernel's definition name holds an "x"
    assert [run["runId"] for run in payload["runs"]] == [run.run_id for run in reversed(runs)]


def test_an_author_finds_their_runs_after_exact_names_and_before_fragments(client: Client, runs: list[Run]) -> None:
    Run.objects.filter(pk=runs[0].pk).update(implementation_name="Ada Lovelace")  # an implementation named so
    Run.objects.filter(pk__in=[runs[3].pk, runs[6].pk]).update(author="ada lovelace")  # her runs
    Run.objects.filter(pk=runs[7].pk).update(author="Ada Lovelace-Byron")  # an author's name holding hers
    Run.objects.filter(pk=runs[9].pk).update(project="after ada lovelace")  # a project's name holding it
    ids = [run.run_id for run in runs]
    assert found(client, "Ada  Lovelace") == [ids[0], ids[6], ids[3], ids[9], ids[7]]
    assert found(client, "lovelace-byron") == [ids[7]]


def test_the_importer_keeps_the_author_its_implementation_names(client: Client, demo: Any, settings: Any) -> None:
    settings.PAGE_CACHE_SECONDS = 0
    authored = Run.objects.filter(source="kernelindex", implementation_digest__gt="")
    assert authored.exists() and set(authored.values_list("author", flat=True)) == {"KernelIndex demo"}
    newest_first = authored.order_by("-observed_at", "-run_id").values_list("run_id", flat=True)
    assert found(client, "kernelindex demo")[:5] == list(newest_first[:5])
