"""A run faster than the physics floor (records.floor, runs.floors): flagged on its page and its group, never
ranked #1, first in the verification queue; an honest run is not flagged."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from api.models import issue_token
from runs.models import Definition, ReferenceRow, Run
from tests.pages import SOL_SUBMISSIONS, visible_text, write_jsonl
from tests.runs.conftest import DEMO
from verification.worker_keys import create_worker_key

pytestmark = pytest.mark.usefixtures("memory_broker")
SUBMIT_URL = "/api/v1/runs"


def too_fast_manifest() -> dict[str, Any]:
    """The demo's rmsnorm-vectorised run, claimed again as 20 ns a case and 10 ns for its largest: the largest
    case writes 4 MiB of float32, 41.9 ns even at the CPU bound of 100 TB/s."""
    for line in (DEMO / "runs" / "reported.jsonl").read_text().splitlines():
        manifest: dict[str, Any] = json.loads(line)
        if manifest["run"]["spec"]["sourceNative"]["externalId"].endswith("/rmsnorm-vectorised"):
            break
    spec = manifest["run"]["spec"]
    manifest["run"]["metadata"]["name"] = "tests-too-fast"
    spec["sourceNative"]["externalId"] = "tests/too-fast"
    spec["timing"]["latencyNs"]["median"] = 20.0
    for case, latency in zip(spec["cases"], (20.0, 20.0, 10.0), strict=True):
        case["latencyNs"] = latency
    return manifest


@pytest.fixture
def submitted(client: Client, demo: Callable[[str], Run], settings: Any) -> Run:
    """The demo imported, the verification policy on with a CPU worker, and the too-fast run submitted."""
    settings.VERIFICATION_POLICY = True
    create_worker_key("tests-cpu", ["cpu"])
    _, secret = issue_token("floor tests")
    body = json.dumps(too_fast_manifest())
    response = client.post(
        SUBMIT_URL, body, content_type="application/json", headers={"Authorization": f"Bearer {secret}"}
    )
    assert response.status_code == 201, response.content
    return Run.objects.get(external_id="tests/too-fast")


def test_no_honest_demo_run_is_flagged(demo: Callable[[str], Run]) -> None:
    assert Run.objects.filter(source="kernelindex").count() > 10
    assert not Run.objects.filter(faster_than_floor=True).exists()


def test_a_run_faster_than_the_floor_is_flagged_on_its_page_with_the_case_and_the_floors_source(
    submitted: Run, client: Client
) -> None:
    assert submitted.faster_than_floor
    text = visible_text(client.get(submitted.get_absolute_url()).content.decode())
    assert "Faster than physically possible." in text
    assert "Case 3 (batch_size=512) reports 10 ns, below its physics floor of 42 ns (4.19× faster" in text
    assert "at 100 TB/s" in text  # the floor's source
    assert "faster than physically possible" in text.split("Per-case results")[1]  # the table's floor column


def test_it_is_never_ranked_first_though_its_claim_is_the_fastest(submitted: Run, client: Client) -> None:
    group = submitted.group
    group.refresh_from_db()
    assert submitted.latency_ns == min(group.runs.exclude(latency_ns=None).values_list("latency_ns", flat=True))
    assert group.best_run_run_id and group.best_run_run_id != submitted.run_id
    listed = client.get(f"/groups/{group.key}.json").json()["runs"]
    ranks = {run["runId"]: run["rank"] for run in listed}
    assert ranks[group.best_run_run_id] == 1
    assert ranks[submitted.run_id] == max(rank for rank in ranks.values() if rank is not None)
    flagged = [run for run in listed if run["fasterThanFloor"]]
    assert [run["runId"] for run in flagged] == [submitted.run_id]
    html = client.get(group.get_absolute_url()).content.decode()
    assert "faster than physically possible" in visible_text(html)
    assert f"{submitted.run_id}: 20 ns (faster than physically possible)" in html  # its point on the chart
    run_page = visible_text(client.get(submitted.get_absolute_url()).content.decode())
    assert "Rank 1 " not in run_page


def test_it_is_first_in_the_verification_queue_and_says_why(submitted: Run, client: Client) -> None:
    waiting = client.get("/verification.json").json()["waiting"]["runs"]
    assert waiting[0]["runId"] == submitted.run_id
    assert waiting[0]["reason"].startswith("faster than physically possible")
    assert "faster than physically possible" in visible_text(client.get("/verification").content.decode())


def test_the_run_twin_carries_the_flag_and_each_cases_floor(submitted: Run, client: Client) -> None:
    floor = client.get(f"/runs/{submitted.run_id}.json").json()["floor"]
    assert floor["fasterThanPhysicallyPossible"] is True
    assert floor["breach"]["case"] == "case 3 (batch_size=512)"
    assert [round(case["floorNs"], 2) for case in floor["cases"]] == [10.49, 20.97, 41.94]
    assert [case["outputBytes"] for case in floor["cases"]] == [2**20, 2**21, 2**22]


def test_decide_floors_flags_runs_stored_before_and_clears_them_once_honest(submitted: Run) -> None:
    Run.objects.filter(pk=submitted.pk).update(faster_than_floor=False, floor_breach=None)
    call_command("decide_floors")
    submitted.refresh_from_db()
    assert submitted.faster_than_floor
    assert submitted.floor_breach["rule"] == 1


def test_no_run_of_the_real_data_is_flagged_and_the_definition_page_shows_each_cases_floor_beside_its_sol_bound(
    import_runs: Callable[..., str], sample: Path, client: Client
) -> None:
    import_runs(sample / "sol-execbench")
    import_runs(sample / "flashinfer-bench")
    import_runs(sample / "kernelbench")
    assert Run.objects.count() > 500
    assert not Run.objects.filter(faster_than_floor=True).exists()
    definition = Definition.objects.get(source="sol-execbench", external_id="8")
    page = visible_text(client.get(definition.get_absolute_url()).content.decode())
    header = page.split("Cases")[1]
    assert header.index("Floor (NVIDIA B200)") < header.index("SOL bound (NVIDIA B200)")
    twin = client.get(definition.get_absolute_url() + ".json").json()
    sol = ReferenceRow.objects.get(definition=definition, kind="sol_bound").per_case_ns
    floors = [case["floors"]["NVIDIA B200"] for case in twin["cases"]]
    assert len(floors) == len(sol) == 16
    assert all(floor >= bound for floor, bound in zip(floors, sol, strict=True))  # the larger of the two


def test_its_groups_feed_never_announces_it_as_the_new_number_one(submitted: Run, client: Client) -> None:
    feed = client.get(f"/groups/{submitted.group.key}/feed.atom").content.decode()
    assert "New #1" in feed
    assert submitted.run_id not in feed


def test_a_sol_execbench_submission_below_the_sources_sol_bound_leaves_the_boards_order_unranked(
    import_runs: Callable[..., str], sample: Path, client: Client, tmp_path: Path
) -> None:
    """Kernel 8's SOL bounds on B200 are microseconds; a submission claiming 100 ns keeps its board score but is
    listed after the board's other runs, without a rank."""
    import_runs(sample / "sol-execbench")
    record = json.loads(SOL_SUBMISSIONS.read_text().splitlines()[0])  # kernel 8, on the board
    record.pop("event")
    record |= {"id": 990_001, "latency_ms": 0.0001}
    import_runs(write_jsonl(tmp_path / "submissions.jsonl", [record]))
    run = Run.objects.get(source="sol-execbench", external_id="990001")
    assert run.faster_than_floor
    assert run.floor_breach["source"] == (
        "the geometric mean of its cases' floors (the source's speed-of-light bounds for the cases)"
    )
    assert run.source_rank is not None  # the board still scores it ...
    text = visible_text(client.get(run.get_absolute_url()).content.decode())
    assert "Not ranked: it reported a time faster than physically possible, so it is listed after" in text
    honest = Run.objects.get(source="sol-execbench", external_id="18134")
    assert not honest.faster_than_floor  # ... the real submission with the same score is not flagged


def test_comparing_it_with_number_one_says_its_figure_is_faster_than_physically_possible(
    submitted: Run, client: Client
) -> None:
    group = submitted.group
    group.refresh_from_db()
    page = visible_text(client.get(f"/compare/{group.best_run_run_id}/{submitted.run_id}").content.decode())
    assert f"{submitted.run_id} reported a time faster than physically possible" in page
