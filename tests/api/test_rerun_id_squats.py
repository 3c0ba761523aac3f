"""POST /api/v1/runs cannot take a future rerun result's permalink, wherever the manifest holds the id.

A token of KernelIndex's own source once could: a manifest with no sourceNative.externalId and the name
`rerun/<run>/<n>` was linked under the next rerun's result, whose honest import then failed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.models import issue_token
from records.identity import run_id_for
from runs.models import Document, Run
from tests.api.conftest import JSONL, Submit, demo_lines, problem_in
from tests.rerun_squats import SQUATS, rerun_permalink, squat, under_another_source

pytestmark = pytest.mark.django_db
REQUEST_NUMBERS = (1, 2, 3)


def stored() -> tuple[int, int]:
    return Run.objects.count(), Document.objects.count()


def permalinks_free(run: Any) -> bool:
    taken = [rerun_permalink(run.run_id, number) for number in REQUEST_NUMBERS]
    return not Run.objects.filter(run_id__in=taken).exists()


@pytest.mark.parametrize("name", SQUATS)
def test_a_squat_is_refused_naming_its_field_and_writes_nothing(name: str, submit: Submit, run: Any) -> None:
    before = stored()
    for number in REQUEST_NUMBERS:
        manifest, field = squat(name, run.run_id, number)

        problem = problem_in(submit(json.dumps(manifest)), 422)

        assert problem["field"] == field, problem
        assert f"field {field}:" in problem["detail"]
        assert "rerun/…" in problem["detail"]
    assert stored() == before
    assert permalinks_free(run)


@pytest.mark.parametrize("name", SQUATS)
def test_a_squat_on_the_second_line_stops_the_whole_body(name: str, submit: Submit, run: Any) -> None:
    before = stored()
    manifest, field = squat(name, run.run_id, 1, index=1)
    body = demo_lines()[0] + "\n" + json.dumps(manifest) + "\n"

    problem = problem_in(submit(body, content_type=JSONL), 422)

    assert (problem["line"], problem["field"]) == (2, field)
    assert stored() == before
    assert permalinks_free(run)


def test_another_sources_rerun_like_id_is_accepted_under_a_permalink_of_its_own(submit: Submit, run: Any) -> None:
    _, secret = issue_token("kernelbench mirror", source="kernelbench")
    manifest = under_another_source(run.run_id, 1, "kernelbench")

    response = submit(json.dumps(manifest), secret=secret)

    assert response.status_code == 201, response.content
    [created] = response.json()["runs"]
    assert created["runId"] == run_id_for("kernelbench", f"rerun/{run.run_id}/1")
    assert created["runId"] != rerun_permalink(run.run_id, 1)
    assert permalinks_free(run)
