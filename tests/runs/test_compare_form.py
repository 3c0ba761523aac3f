"""`/compare?a=…&b=…`: two run ids land on the compare page; anything else is the form again, with its error."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from runs.models import Run
from tests.pages import visible_text

NOT_AN_ID = "A run id is 12 hexadecimal digits"
NOT_RUN_IDS = ["x/y", "/", "%2F", "../", "..", "a/b/c", "ffffffffffff/..", "gggggggggggg", "ffffffffffffff"]


@pytest.mark.parametrize("a", NOT_RUN_IDS)
def test_what_is_not_a_run_id_gets_the_form_with_its_error(
    client: Client, run: Run, a: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    response = Client(raise_request_exception=False).get(f"/compare?a={a}&b={run.run_id}")
    assert response.status_code == 400
    assert NOT_AN_ID in visible_text(response.content)
    assert all(record.exc_info is None for record in caplog.records)


def test_run_ids_are_taken_as_pasted(client: Client, run: Run) -> None:
    other = Run.objects.exclude(pk=run.pk).first()
    assert other is not None
    response = client.get("/compare", {"a": f"  {run.run_id.upper()} ", "b": other.run_id})
    assert response.status_code == 302
    assert response["Location"] == f"/compare/{run.run_id}/{other.run_id}"
