"""Atom feeds: new runs per source and per definition, a group's new #1, rerun verdicts; each linked from its page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import feedparser
import pytest
from django.test import Client
from django.utils import timezone

from runs.models import ComparisonGroup, Definition, Run
from tests.conftest import ImportRuns
from tests.pages import sol_records, write_jsonl
from verification.models import RerunRequest
from web.scopes import RERUN_VERDICT

ATOM = "application/atom+xml"


def parsed(client: Client, url: str) -> Any:
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith(ATOM)
    feed = feedparser.parse(response.content)
    assert not feed.bozo, feed.get("bozo_exception")
    assert feed.version == "atom10"
    return feed


def run_ids_linked(feed: Any) -> list[str]:
    """The run ids the entries link to; every entry must link to a run page."""
    ids = []
    for entry in feed.entries:
        match = re.fullmatch(r"https?://[^/]+/runs/([0-9a-f]+)(#reruns)?", entry.link)
        assert match, entry.link
        ids.append(match.group(1))
    return ids


def head_links(client: Client, url: str) -> list[str]:
    html = client.get(url).content.decode()
    head = html.split("</head>", 1)[0]
    return re.findall(r'<link rel="alternate" type="application/atom\+xml" href="([^"]+)"', head)


@pytest.fixture
def imported(import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "sol-execbench", sample / "kernelbench")


@pytest.mark.usefixtures("imported")
def test_a_sources_feed_lists_its_newest_runs(client: Client) -> None:
    [url] = [link for link in head_links(client, "/sources/kernelbench") if "sources" in link]
    feed = parsed(client, url)
    assert feed.feed.title == "New runs from KernelBench · KernelIndex"
    linked = run_ids_linked(feed)
    assert 0 < len(linked) <= 50
    assert set(Run.objects.filter(run_id__in=linked).values_list("source", flat=True)) == {"kernelbench"}
    assert url in head_links(client, "/")


@pytest.mark.usefixtures("imported")
def test_a_definitions_feed_lists_its_runs_even_with_slashes_in_its_name(client: Client) -> None:
    definition = Definition.objects.filter(source="kernelbench", name__contains="/").first()
    assert definition is not None
    [url] = head_links(client, definition.get_absolute_url())
    assert url.endswith("/feed.atom")
    feed = parsed(client, url)
    expected = set(Run.objects.listed().filter(definition=definition).values_list("run_id", flat=True))
    assert set(run_ids_linked(feed)) == expected
    assert definition.title in feed.feed.title


def test_a_groups_feed_has_an_entry_each_time_its_number_one_changed(
    client: Client, import_runs: ImportRuns, tmp_path: Path
) -> None:
    slow, fast, slower, fastest = sol_records(4, start_id=700_000)
    # Latencies as imported one file at a time: 40 µs, then 30 (a new #1), 50 (not), 20 (a new #1).
    for index, (record, ms) in enumerate(((slow, 0.04), (fast, 0.03), (slower, 0.05), (fastest, 0.02))):
        import_runs(write_jsonl(tmp_path / f"{index}.jsonl", [record | {"latency_ms": ms}]))
    by_id = {run.external_id: run for run in Run.objects.all()}
    group = by_id[str(slow["id"])].group
    ComparisonGroup.objects.filter(pk=group.pk).update(native_order="")  # ranked by latency

    [url] = head_links(client, group.get_absolute_url())
    feed = parsed(client, url)
    expected = [by_id[str(record["id"])].run_id for record in (fastest, fast, slow)]
    assert run_ids_linked(feed) == expected  # newest first; the slower run never took the top
    assert feed.entries[0].title.startswith("New #1: ")

    # A rerun finds the fastest one not reproduced: it never led, and the feed says so once the verdict is in.
    caught = by_id[str(fastest["id"])]
    Run.objects.filter(pk=caught.pk).update(evidence=Run.Evidence.NOT_REPRODUCED)
    RERUN_VERDICT.retire_now(caught)  # as the verdict's commit does
    assert run_ids_linked(parsed(client, url)) == expected[1:]


@pytest.mark.usefixtures("imported")
def test_the_rerun_feed_lists_finished_verdicts(client: Client) -> None:
    run = Run.objects.filter(source="sol-execbench").first()
    assert run is not None
    finished = RerunRequest.objects.create(
        run=run,
        run_digest=run.digest,
        hardware="nvidia-b200",
        state=RerunRequest.State.SUCCEEDED,
        verdict="not_reproduced",
        verdict_reason="Case 3 failed on fresh inputs.",
        finished_at=timezone.now(),
    )
    RerunRequest.objects.create(run=Run.objects.exclude(pk=run.pk).first(), run_digest="x", hardware="cpu")
    feed = parsed(client, "/reruns/feed.atom")
    assert run_ids_linked(feed) == [run.run_id]
    [entry] = feed.entries
    assert entry.title == f"Run {run.run_id}: {finished.verdict_label} (rerun #{finished.pk} on nvidia-b200)"
    assert "Case 3 failed on fresh inputs." in entry.summary
    assert "/reruns/feed.atom" in head_links(client, "/")[0]


def test_an_empty_feed_is_still_valid_atom(client: Client, db: None) -> None:
    assert parsed(client, "/reruns/feed.atom").entries == []


@pytest.mark.parametrize(
    "url",
    [
        "/sources/no-such-source/feed.atom",
        "/groups/sha256:0000/feed.atom",
        "/definitions/kernelbench/no/such/definition/feed.atom",
    ],
)
def test_unknown_keys_are_404(client: Client, db: None, url: str) -> None:
    assert client.get(url).status_code == 404
