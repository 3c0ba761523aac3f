"""The read API: the same bodies as the pages' `.json` twins, and a list of runs read a page at a time."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

from runs.models import ComparisonGroup, Run
from runs.services import withdraw_run
from tests.api.conftest import DEMO_MANIFESTS, problem_in
from tests.conftest import SAMPLE_DATA

LOCAL_MEMORY_CACHE = "django.core.cache.backends.locmem.LocMemCache"

KERNELBENCH_PROBLEM = "level1/1_Square_matrix_multiplication_.py"


# Every test reads the runs `imported` stored, in a transaction of its own that is rolled back at its end.
pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def imported(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """The sample data and the demo's runs, imported once for the module rather than for each test (two seconds
    each): a run one test withdraws, in its own transaction, the next still lists. Outside any test, so with the
    policy off and a cache of its own, as the tests' own fixtures (tests/conftest.py) would have it; removed at the
    end as a transactional test's rows are."""
    quiet = override_settings(VERIFICATION_POLICY=False, CACHES={"default": {"BACKEND": LOCAL_MEMORY_CACHE}})
    with django_db_blocker.unblock(), quiet:
        for path in (SAMPLE_DATA / "sol-execbench" / "submissions.jsonl", SAMPLE_DATA / "kernelbench", DEMO_MANIFESTS):
            call_command("import_runs", str(path), stdout=io.StringIO())
    yield
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


def every_page(client: Client, url: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    next_url: str | None = url
    while next_url:
        response = client.get(next_url)
        assert response.status_code == 200, response.content
        runs += response.json()["runs"]
        next_url = response.json()["next"]
    return runs


def test_following_next_reads_every_listed_run_once(client: Client, imported: None, settings: Any) -> None:
    settings.RUNS_PER_PAGE = 7
    withdrawn = Run.objects.order_by("id").first()
    assert withdrawn is not None
    withdraw_run(withdrawn, "duplicate of another run")

    runs = every_page(client, "/api/v1/runs")

    ids = [run["runId"] for run in runs]
    assert len(ids) == len(set(ids))
    assert set(ids) == set(Run.objects.listed().values_list("run_id", flat=True))
    assert withdrawn.run_id not in ids
    assert len(ids) > 7
    # The first page is the home page's, as its JSON twin lists it.
    assert ids[:7] == [run["runId"] for run in client.get("/index.json").json()["runs"]]


def test_a_limit_sizes_every_page(client: Client, imported: None) -> None:
    first = client.get("/api/v1/runs?limit=4").json()
    assert len(first["runs"]) == 4
    second = client.get(first["next"]).json()
    assert len(second["runs"]) == 4
    assert not {run["runId"] for run in first["runs"]} & {run["runId"] for run in second["runs"]}
    runs = every_page(client, "/api/v1/runs?limit=9")
    assert len(runs) == Run.objects.listed().count()


def test_the_home_page_filters_apply_and_carry_over_to_the_next_page(
    client: Client, imported: None, settings: Any
) -> None:
    settings.RUNS_PER_PAGE = 3
    runs = every_page(client, "/api/v1/runs?source=kernelbench")

    assert runs
    assert {run["source"] for run in runs} == {"kernelbench"}
    assert len(runs) == Run.objects.filter(source="kernelbench").count()
    searched = client.get("/api/v1/runs", {"q": "rmsnorm-vectorised"}).json()
    assert [run["implementation"] for run in searched["runs"]] == ["rmsnorm-vectorised"]
    assert searched["filters"] == {"q": "rmsnorm-vectorised"}


@pytest.mark.parametrize(
    "query",
    ["evidence=certainly", "source=nowhere", f"gpu={'x' * 201}", "limit=0", "limit=100000", "limit=many"],
)
def test_bad_list_parameters_get_422(client: Client, imported: None, query: str) -> None:
    response = client.get(f"/api/v1/runs?{query}")

    assert problem_in(response, 422)["field"] == query.split("=")[0]


def test_hardware_without_runs_lists_none(client: Client, imported: None) -> None:
    """Unlike the home page's select, the API's filter takes any product: what it accepts does not change as
    runs arrive, so its document can say so once."""
    answer = client.get("/api/v1/runs", {"gpu": "Commodore 64"}).json()

    assert (answer["runs"], answer["filters"]) == ([], {"gpu": "Commodore 64"})
    b200 = client.get("/api/v1/runs", {"gpu": "NVIDIA B200"}).json()["runs"]
    assert b200 and {run["hardware"] for run in b200} == {"NVIDIA B200"}


def test_a_run_is_its_twin_with_its_summary(client: Client, imported: None) -> None:
    run = Run.objects.get(external_id="demo/rmsnorm_h2048/rmsnorm-vectorised")

    body = client.get(f"/api/v1/runs/{run.run_id}").json()

    twin = client.get(f"/runs/{run.run_id}.json")
    assert body["manifest"] == twin.json()
    assert body["manifest"]["run"]["spec"]["implementationDigest"] == run.implementation_digest
    assert body["digest"] == run.digest
    assert body["evidence"] == "reported"
    assert body["manifestUrl"].endswith(f"/runs/{run.run_id}.json")
    assert body["withdrawn"] is None


def test_a_withdrawn_run_says_so(client: Client, imported: None) -> None:
    run = Run.objects.get(external_id="demo/rmsnorm_h2048/rmsnorm-vectorised")
    withdraw_run(run, "measured on the wrong machine")

    body = client.get(f"/api/v1/runs/{run.run_id}").json()

    assert body["withdrawn"]["reason"] == "measured on the wrong machine"


def test_a_definition_whose_name_holds_slashes(client: Client, imported: None) -> None:
    response = client.get(f"/api/v1/definitions/kernelbench/{KERNELBENCH_PROBLEM}")

    assert response.status_code == 200
    assert response.json() == client.get(f"/definitions/kernelbench/{KERNELBENCH_PROBLEM}.json").json()
    assert response.json()["name"] == KERNELBENCH_PROBLEM
    assert response.json()["groups"]


def test_a_group_is_its_twin(client: Client, imported: None) -> None:
    group = ComparisonGroup.objects.filter(definition__name=KERNELBENCH_PROBLEM).first()
    assert group is not None

    body = client.get(f"/api/v1/groups/{group.key}").json()

    twin = client.get(f"/groups/{group.key}.json").json()
    assert body["runs"] == twin["runs"]
    assert body["key"] == group.key
    assert body["hardware"] == twin["hardware"] == group.hardware
