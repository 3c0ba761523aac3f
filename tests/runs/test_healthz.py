"""GET /healthz: what a load balancer polls."""

from __future__ import annotations

from django.test import Client


def test_healthz_answers_ok_without_touching_the_database(client: Client) -> None:
    # No django_db mark: pytest-django fails any database access in this test.
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok"
    assert response["Content-Type"] == "text/plain"
    assert "no-cache" in response["Cache-Control"]


def test_healthz_answers_get_and_head_only(client: Client) -> None:
    head = client.head("/healthz")
    assert (head.status_code, head.content, head["Content-Type"]) == (200, b"", "text/plain")
    assert client.post("/healthz").status_code == 405
