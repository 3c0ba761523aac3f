"""Behind proxies: the client's own address, HTTPS as the TLS proxy saw it, and forms that post."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, RequestFactory

from attestations.models import Attestation
from runs.models import Run
from tests.attestations.form_data import note_data
from tests.conftest import ImportRuns
from tests.pages import HTMX
from web import ratelimit
from web.proxies import client_address

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def run(import_runs: ImportRuns, sample: Path) -> Run:
    import_runs(sample / "sol-execbench" / "submissions.jsonl")
    found = Run.objects.order_by("run_id").first()
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("hops", "forwarded_for", "expected"),
    [
        (0, "198.51.100.7", "10.0.0.1"),  # no trusted proxy: a header anyone can send proves nothing
        (1, "198.51.100.7", "198.51.100.7"),
        (1, "6.6.6.6, 198.51.100.7", "198.51.100.7"),  # the client wrote the left entry itself
        (2, "6.6.6.6, 198.51.100.7, 10.0.0.2", "198.51.100.7"),
        (2, "2001:db8::1 , 10.0.0.2", "2001:db8::1"),
        (1, "", "10.0.0.1"),  # it passed no proxy: the socket's peer is the client
        (1, ",, 198.51.100.7", "198.51.100.7"),  # the client's own junk, left of the proxy's entry, changes nothing
        (1, ", 198.51.100.7", "198.51.100.7"),
        # What the trusted proxies wrote cannot be read: nobody can say who the client is. Not the socket's
        # address either: that is the proxy's (or, over a unix socket, empty), shared by all who send junk.
        (2, "198.51.100.7", None),  # fewer entries than proxies
        (1, ",,", None),
        (1, "198.51.100.7, ", None),
        (1, "not-an-address", None),
        (1, "198.51.100.7:4711", None),
        (2, "198.51.100.7,,10.0.0.2", None),
    ],
)
def test_the_client_address_is_read_as_far_as_the_trusted_proxies_go(
    rf: RequestFactory, settings: Any, hops: int, forwarded_for: str, expected: str | None
) -> None:
    settings.TRUSTED_PROXY_HOPS = hops
    request = rf.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded_for)
    assert client_address(request) == expected


def test_two_visitors_behind_one_proxy_have_their_own_allowance(client: Client, run: Run, settings: Any) -> None:
    settings.TRUSTED_PROXY_HOPS = 1
    proxy = {"REMOTE_ADDR": "127.0.0.1"}
    for _ in range(ratelimit.SUBMISSIONS_PER_WINDOW):
        response = client.post(
            f"/runs/{run.run_id}/notes", note_data(), headers=HTMX, HTTP_X_FORWARDED_FOR="198.51.100.7", **proxy
        )
        assert response.status_code == 200
    refused = client.post(f"/runs/{run.run_id}/notes", note_data(), HTTP_X_FORWARDED_FOR="198.51.100.7", **proxy)
    assert refused.status_code == 429
    other = client.post(f"/runs/{run.run_id}/notes", note_data(), HTTP_X_FORWARDED_FOR="203.0.113.9", **proxy)
    assert other.status_code == 302
    assert Attestation.objects.count() == ratelimit.SUBMISSIONS_PER_WINDOW + 1


@pytest.mark.parametrize("forwarded_for", [",,", "", " ", "198.51.100.7, ", "not-an-address"])
def test_a_malformed_header_never_gets_an_allowance_of_its_own(
    client: Client, run: Run, settings: Any, forwarded_for: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Behind nginx on a unix socket, where the socket's address is empty, as `make serve` runs."""
    settings.TRUSTED_PROXY_HOPS = 2
    behind_nginx = {"REMOTE_ADDR": "", "HTTP_X_FORWARDED_FOR": f"{forwarded_for}, 127.0.0.1".lstrip(", ")}
    caplog.set_level(logging.INFO)
    for _ in range(ratelimit.SUBMISSIONS_PER_WINDOW + 1):
        response = client.post(f"/runs/{run.run_id}/notes", note_data(), headers=HTMX, **behind_nginx)
        assert response.status_code == 400
    assert Attestation.objects.count() == 0
    assert {record.getMessage() for record in caplog.records} == {
        f"Bad Request (client address unreadable): /runs/{run.run_id}/notes"
    }


def test_a_malformed_header_never_gets_sign_in_attempts_of_its_own(client: Client, settings: Any) -> None:
    settings.TRUSTED_PROXY_HOPS = 2
    behind_nginx = {"REMOTE_ADDR": "", "HTTP_X_FORWARDED_FOR": ",, , 127.0.0.1"}
    response = client.post("/admin/login/", {"username": "mod", "password": "guess"}, **behind_nginx)
    assert response.status_code == 400


def production_settings(**env: str) -> dict[str, Any]:
    """Settings as a production process reads them from its environment."""
    script = (
        "import json, django; django.setup(); from django.conf import settings as s;"
        "print(json.dumps({'ssl': s.SECURE_PROXY_SSL_HEADER, 'origins': s.CSRF_TRUSTED_ORIGINS,"
        " 'hops': s.TRUSTED_PROXY_HOPS}))"
    )
    base = {k: v for k, v in os.environ.items() if k not in {"SITE_URL", "CSRF_TRUSTED_ORIGINS", "TRUSTED_PROXY_HOPS"}}
    environment = base | {"DJANGO_SETTINGS_MODULE": "kernelindex.settings", "DEBUG": "false"} | env
    environment |= {"SECRET_KEY": "test", "ALLOWED_HOSTS": "kernelindex.example"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout))


def test_behind_a_tls_proxy_https_is_trusted_and_the_site_is_a_trusted_origin() -> None:
    read = production_settings(TRUSTED_PROXY_HOPS="2", SITE_URL="https://kernelindex.example/")
    assert read == {
        "ssl": ["HTTP_X_FORWARDED_PROTO", "https"],
        "origins": ["https://kernelindex.example"],
        "hops": 2,
    }
    assert production_settings(CSRF_TRUSTED_ORIGINS="https://a.example,https://b.example")["origins"] == [
        "https://a.example",
        "https://b.example",
    ]


def test_without_trusted_proxies_a_forwarded_scheme_is_ignored() -> None:
    assert production_settings()["ssl"] is None


def test_a_form_posted_through_a_tls_proxy_is_accepted(run: Run, settings: Any) -> None:
    settings.TRUSTED_PROXY_HOPS = 2
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.CSRF_COOKIE_SECURE = True
    # As the TLS proxy passes it on: the site's host, the scheme it was reached by, the client's address.
    through_proxy = {"HTTP_HOST": "testserver", "HTTP_X_FORWARDED_PROTO": "https"}
    visitor = Client(enforce_csrf_checks=True, HTTP_X_FORWARDED_FOR="198.51.100.7, 10.0.0.2", **through_proxy)
    form = visitor.get(f"/runs/{run.run_id}/notes", headers=HTMX)
    token = form.content.decode().split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
    response = visitor.post(
        f"/runs/{run.run_id}/notes",
        note_data() | {"csrfmiddlewaretoken": token},
        headers={"Origin": "https://testserver", "Referer": f"https://testserver/runs/{run.run_id}"},
    )
    assert response.status_code == 302
    assert Attestation.objects.count() == 1
