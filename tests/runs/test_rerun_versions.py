"""A rerun checks the figures of the version it reran: a run's new version holds figures no rerun has checked.

A run reproduced at one version kept its level when its source published another: a new version claiming every
latency ten times faster was shown "Reproduced" and ranked #1 by figures nothing had checked, and a rerun of the
old version that finished after the new one arrived still decided the run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from runs.dump_sections import reset_sequence
from runs.models import Run
from tests.conftest import ImportRuns
from tests.pages import visible_text
from tests.runs import attested
from tests.runs.conftest import demo_manifest_with_latencies_divided
from tests.runs.run_page_reruns import result_on_cases
from tests.runs.test_dump_evidence import dump_into, figures, forget_everything, public_pages, rewrite_lines
from verification.models import EvidenceChange, RerunRequest
from verification.reruns import request_rerun

pytestmark = pytest.mark.usefixtures("memory_broker")

NAME = "rmsnorm-vectorised"


@pytest.fixture
def new_version(import_runs: ImportRuns, tmp_path: Path) -> Callable[[str, float], Run]:
    """The demo run published again by its source, the same run (its id and name), with every latency it gives
    (its own, each case's and each case's reference's) divided by `divisor`."""

    def publish(name: str, divisor: float) -> Run:
        manifest = demo_manifest_with_latencies_divided(name, divisor)
        path = tmp_path / f"{name}-divided-by-{divisor:g}.json"
        path.write_text(json.dumps(manifest))
        import_runs(path)
        return Run.objects.get(source="kernelindex", external_id=manifest["run"]["spec"]["sourceNative"]["externalId"])

    return publish


def reproduce(run: Run) -> RerunRequest:
    """A rerun of the run's current version that measured it twice as fast as reported."""
    assert run.latency_ns is not None
    rerun = attested.finish(request_rerun(run, user=None), result_on_cases(run, median=run.latency_ns / 2))
    assert rerun.verdict == "reproduced", rerun.verdict_reason
    return rerun


def test_a_new_version_of_a_reproduced_run_is_reported_until_a_rerun_of_it_decides(
    client: Client, demo: Callable[[str], Run], new_version: Callable[[str, float], Run]
) -> None:
    run = demo(NAME)
    first_version, honest_latency = run.digest, run.latency_ns
    assert honest_latency is not None
    reproduce(run)

    run = new_version(NAME, 10)
    assert run.digest != first_version
    assert (run.evidence, run.latency_ns) == ("reported", pytest.approx(honest_latency / 10))
    back = EvidenceChange.objects.filter(run=run).latest("changed_at")
    assert (back.previous, back.evidence, back.rerun, back.version) == ("reproduced", "reported", None, run.digest)
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert "Evidence: Reported" in page
    assert "of an earlier version of the run, whose figures it no longer reports: shown, moves nothing" in page
    history = visible_text(client.get(f"{run.get_absolute_url()}/history").content)
    assert "Reproduced → Reported" in history and "no rerun of the run's version" in history
    twin = client.get(f"/runs/{run.run_id}.json").json()
    assert twin["evidence"]["level"] == "reported"
    assert [(c["rerun"], c["version"]) for c in twin["evidence"]["history"] if c["to"] == "reported"] == [
        (None, run.digest)
    ]
    assert twin["reruns"][0]["countsForEvidence"] is False
    board = client.get(f"{run.group.get_absolute_url()}.json").json()["runs"]
    assert {row["runId"]: row["evidence"] for row in board}[run.run_id] == "reported"

    # The new version's own rerun measures the kernel as fast as the first version's figures said.
    rerun = attested.finish(request_rerun(run, user=None), result_on_cases(run, median=honest_latency))
    assert rerun.verdict == "not_reproduced", rerun.verdict_reason
    run.refresh_from_db()
    assert run.evidence == "not_reproduced"


def test_a_rerun_of_an_earlier_version_that_ends_after_a_new_one_arrived_moves_nothing(
    client: Client, demo: Callable[[str], Run], new_version: Callable[[str, float], Run]
) -> None:
    run = demo(NAME)
    first_latency = run.latency_ns
    assert first_latency is not None
    asked = request_rerun(run, user=None)
    run = new_version(NAME, 10)
    # Twice as fast as the version it reran reported: that version is reproduced, not the one the run holds now.
    finished = attested.finish(asked, result_on_cases(run, median=first_latency / 2))
    assert finished.verdict == "reproduced" and finished.run_digest != run.digest
    run.refresh_from_db()
    assert (run.evidence, run.latency_ns, run.reported_latency_ns) == (
        "reported",
        pytest.approx(first_latency / 10),
        None,
    )
    assert not EvidenceChange.objects.filter(run=run).exists()
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert "No conclusive KernelIndex rerun yet" in page


# Reruns numbered from 1 again after the dump (PostgreSQL's sequences outlive a rolled-back test).
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_a_dump_carries_a_new_versions_way_back_to_reported(
    client: Client,
    settings: Any,
    demo: Callable[[str], Run],
    new_version: Callable[[str, float], Run],
    import_runs: ImportRuns,
    tmp_path: Path,
) -> None:
    settings.PAGE_CACHE_SECONDS = 0
    reproduce(demo(NAME))
    run = new_version(NAME, 10)
    before, pages = figures(), public_pages(client)
    dumped = dump_into(tmp_path / "dump")

    forget_everything()
    reset_sequence(RerunRequest)
    import_runs(tmp_path / "dump")
    assert figures() == before
    assert public_pages(client) == pages
    assert EvidenceChange.objects.get(run__run_id=run.run_id, rerun=None).version == run.digest
    assert dump_into(tmp_path / "again") == dumped


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"to": "reproduced"}, "changes.1.rerun: none, but only a rerun moves a run to reproduced"),
        ({"version": "sha256:" + "0" * 64}, "not a version of this run"),
        ({"version": None}, "changes.1.version: none, and no rerun either"),
    ],
    ids=["no-rerun-to-reproduced", "another-runs-version", "neither"],
)
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_a_dump_whose_change_names_no_rerun_and_no_version_of_the_run_is_refused(
    demo: Callable[[str], Run],
    new_version: Callable[[str, float], Run],
    import_runs: ImportRuns,
    tmp_path: Path,
    change: dict[str, Any],
    said: str,
) -> None:
    reproduce(demo(NAME))
    new_version(NAME, 10)
    dump_into(tmp_path / "dump")
    forget_everything()
    reset_sequence(RerunRequest)

    def forged(line: dict[str, Any]) -> None:
        for step in line["changes"]:
            if step["rerun"] is None:
                step.update(change)
                if step["to"] != "reported":
                    line["level"] = step["to"]

    rewrite_lines(tmp_path / "dump", "evidence.jsonl.gz", forged)
    output = import_runs(tmp_path / "dump", fails=True)
    assert "evidence.jsonl.gz" in output and said in output, output
    assert not Run.objects.exists()
