"""`make serve` in production mode: nginx in front of gunicorn, as a site behind a TLS proxy would run it.

The server is a real process tree (make, deploy/serve.py, gunicorn, nginx) on a free
loopback port, reading this test's PostgreSQL database, so the data the test
commits is what it serves.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.db import connection

from runs.models import Run
from tests.attestations.form_data import note_data
from tests.conftest import ImportRuns
from tests.pages import HTMX
from web import ratelimit

ROOT = Path(__file__).resolve().parent.parent.parent
START_TIMEOUT = 180.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h
# The site as its visitors reach it: through the TLS proxy, on the host the proxy passes on.
PUBLIC_HOST = "127.0.0.1"
PUBLIC_ORIGIN = f"https://{PUBLIC_HOST}"
TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')

pytestmark = pytest.mark.django_db(transaction=True)


@dataclass
class Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes


@dataclass
class Site:
    port: int
    run_dir: Path
    log: Path

    def request(self, method: str, path: str, headers: dict[str, str] | None = None, body: str = "") -> Response:
        client = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            client.request(method, path, body=body.encode() or None, headers=headers or {})
            answer = client.getresponse()
            return Response(answer.status, answer.headers, answer.read())
        finally:
            client.close()

    def pids(self) -> list[int]:
        return [int((self.run_dir / name).read_text()) for name in ("nginx.pid", "gunicorn.pid")]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def database_url() -> str:
    db = connection.settings_dict
    credentials = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{credentials}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def stop_with_this_process() -> None:
    """In the child: a SIGTERM when the test process dies, killed or not, which make passes on to what it runs.

    Without it, a test run killed mid-test (a CI timeout) would leave nginx and gunicorn serving.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def site(request: pytest.FixtureRequest, tmp_path: Path, import_runs: ImportRuns, sample: Path) -> Iterator[Site]:
    """`make serve` behind a TLS proxy (two trusted hops), or with nginx at the edge (`indirect` param 1)."""
    hops = getattr(request, "param", 2)
    if connection.vendor != "postgresql":
        pytest.skip("the server runs in processes of its own: it needs the test database on PostgreSQL")
    if not shutil.which("nginx") and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (apt-get install nginx)")
    import_runs(sample / "sol-execbench" / "submissions.jsonl")
    port, var, log = free_port(), tmp_path / "var", tmp_path / "serve.log"
    environment = os.environ | {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(32),
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": database_url(),
        "KERNELINDEX_VAR_DIR": str(var),
        "STATIC_ROOT": str(tmp_path / "static"),
        "CACHE_KEY_PREFIX": f"test-serve-{secrets.token_hex(8)}",
        # A TLS-terminating proxy in front of make serve's nginx: two hops.
        "TRUSTED_PROXY_HOPS": str(hops),
        "SECURE_SSL_REDIRECT": "false",
    }
    command = ["make", "serve", f"PORT={port}", f"VENV={sys.prefix}"]
    with log.open("wb") as output:
        server = subprocess.Popen(
            command,
            cwd=ROOT,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=stop_with_this_process,
        )
    site = Site(port, var / "serve", log)
    try:
        wait_until_up(site, server)
        pids = site.pids()
        yield site
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)  # make itself dies of the signal; what it started must stop with it
    assert not [pid for pid in pids if alive(pid)], "nginx or gunicorn outlived make serve"


def wait_until_up(site: Site, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"make serve stopped:\n{site.log.read_text()[-3000:]}")
        with contextlib.suppress(OSError):
            if site.request("GET", "/healthz").status == 200:
                return
        time.sleep(0.2)
    pytest.fail(f"make serve did not answer within {START_TIMEOUT:.0f} s:\n{site.log.read_text()[-3000:]}")


def half_open_connections(site: Site, count: int) -> list[socket.socket]:
    """Clients that never finish: half send part of their headers, half less body than they announced."""
    sockets = []
    for n in range(count):
        client = socket.create_connection(("127.0.0.1", site.port))
        if n % 2:
            client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow")
        else:
            client.sendall(
                b"POST /runs/x/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                b"Content-Length: 4000\r\n\r\nnote-body=just"
            )
        sockets.append(client)
    return sockets


def through_tls_proxy(visitor: str, cookie: str = "") -> dict[str, str]:
    """What a TLS-terminating proxy in front of nginx passes on for a visitor at `visitor`."""
    headers = {"X-Forwarded-For": visitor, "X-Forwarded-Proto": "https", "Host": PUBLIC_HOST}
    return headers | ({"Cookie": f"csrftoken={cookie}"} if cookie else {})


def open_note_form(site: Site, run: Run, visitor: str) -> tuple[str, str]:
    """The visitor's CSRF cookie and the token of the note form, as htmx fetches it."""
    return open_form(site, f"/runs/{run.run_id}/notes", through_tls_proxy(visitor) | HTMX)


def open_form(site: Site, path: str, headers: dict[str, str]) -> tuple[str, str]:
    """The CSRF cookie a form's page sets and the token in the form."""
    form = site.request("GET", path, headers)
    assert form.status == 200
    cookie = re.search(r"csrftoken=([^;]+)", form.headers.get("Set-Cookie", ""))
    token = TOKEN.search(form.body.decode())
    assert cookie and token
    return cookie.group(1), token.group(1)


def post_note(site: Site, run: Run, visitor: str, htmx: bool = True) -> Response:
    cookie, token = open_note_form(site, run, visitor)
    headers = through_tls_proxy(visitor, cookie) | {
        "Content-Type": "application/x-www-form-urlencoded",
        "Origin": PUBLIC_ORIGIN,
        "Referer": f"{PUBLIC_ORIGIN}/runs/{run.run_id}",
    }
    body = urlencode(note_data() | {"csrfmiddlewaretoken": token})
    return site.request("POST", f"/runs/{run.run_id}/notes", headers | (HTMX if htmx else {}), body)


def test_idle_and_slow_clients_do_not_hold_up_the_site(site: Site) -> None:
    sockets = half_open_connections(site, 64)
    try:
        started = time.monotonic()
        answer = site.request("GET", "/healthz")
        assert answer.status == 200 and answer.body == b"ok"
        assert time.monotonic() - started < 2.0
    finally:
        for client in sockets:
            client.close()


def test_head_answers_without_a_body(site: Site) -> None:
    for path in ("/healthz", "/"):
        answer = site.request("HEAD", path)
        assert answer.status == 200, path
        assert answer.body == b""


def test_pages_carry_the_content_security_policy(site: Site) -> None:
    for path in ("/", "/healthz"):
        policy = site.request("GET", path).headers["Content-Security-Policy"]
        assert "default-src 'self'" in policy, path
        assert "unsafe-inline" not in policy, path


def test_static_files_come_from_nginx(site: Site) -> None:
    answer = site.request("GET", "/static/css/site.css")
    assert answer.status == 200
    assert answer.headers["Content-Type"] == "text/css"
    assert b"{" in answer.body


def test_a_form_posted_through_a_tls_proxy_is_accepted(site: Site) -> None:
    run = Run.objects.order_by("run_id").first()
    assert run is not None
    answer = post_note(site, run, "198.51.100.7", htmx=False)
    assert answer.status == 302, answer.body.decode()[:2000]
    assert answer.headers["Location"] == f"{run.get_absolute_url()}#notes"
    assert run.attestations.count() == 1


def test_two_visitors_behind_the_proxies_have_their_own_allowance(site: Site) -> None:
    run = Run.objects.order_by("run_id").first()
    assert run is not None
    for _ in range(ratelimit.SUBMISSIONS_PER_WINDOW):
        assert post_note(site, run, "198.51.100.7").status == 200
    assert post_note(site, run, "198.51.100.7", htmx=False).status == 429
    assert post_note(site, run, "203.0.113.9", htmx=False).status == 302
    assert run.attestations.count() == ratelimit.SUBMISSIONS_PER_WINDOW + 1


def test_static_files_are_never_sniffed(site: Site) -> None:
    page = site.request("GET", "/").body.decode()
    hashed = re.search(r'href="(/static/css/site\.[0-9a-f]{12}\.css)"', page)
    assert hashed is not None, "the page links its style sheet by its hashed name"
    for path in ("/static/css/site.css", hashed.group(1)):
        answer = site.request("GET", path)
        assert answer.status == 200, path
        assert answer.headers["X-Content-Type-Options"] == "nosniff", path


def post_note_as_sent(site: Site, run: Run, forwarded_for: str | None, htmx: bool = False) -> Response:
    """A note posted straight to nginx with this X-Forwarded-For (a client bypassing the proxy, or at the edge)."""
    sent = {"X-Forwarded-For": forwarded_for} if forwarded_for is not None else {}
    cookie, token = open_form(site, f"/runs/{run.run_id}/notes", sent | HTMX)
    headers = sent | {
        "Cookie": f"csrftoken={cookie}",
        "Content-Type": "application/x-www-form-urlencoded",
        "Origin": f"http://127.0.0.1:{site.port}",
    }
    body = urlencode(note_data() | {"csrfmiddlewaretoken": token})
    return site.request("POST", f"/runs/{run.run_id}/notes", headers | (HTMX if htmx else {}), body)


MALFORMED_FORWARDED_FOR = [",,", "", "198.51.100.7, ", "not-an-address"]


def test_behind_the_proxies_a_malformed_header_gets_no_allowance(site: Site) -> None:
    """Two trusted hops: the entry the TLS proxy writes is what counts; where it is junk, nobody is counted."""
    run = Run.objects.order_by("run_id").first()
    assert run is not None
    for forwarded_for in MALFORMED_FORWARDED_FOR:
        assert post_note_as_sent(site, run, forwarded_for).status == 400, forwarded_for
    assert run.attestations.count() == 0
    # The admin's sign-in throttle is not handed a count of its own either.
    cookie, token = open_form(site, "/admin/login/", {"X-Forwarded-For": ",,"})
    headers = {"X-Forwarded-For": ",,", "Cookie": f"csrftoken={cookie}"}
    headers |= {"Content-Type": "application/x-www-form-urlencoded", "Origin": f"http://127.0.0.1:{site.port}"}
    body = urlencode({"username": "mod", "password": "guess", "csrfmiddlewaretoken": token})
    assert site.request("POST", "/admin/login/", headers, body).status == 400


@pytest.mark.parametrize("site", [1], indirect=True)
def test_at_the_edge_junk_in_the_header_counts_against_the_sender(site: Site) -> None:
    """nginx alone in front (one hop): it appends the address it saw, so junk to its left changes nothing."""
    run = Run.objects.order_by("run_id").first()
    assert run is not None
    for _ in range(ratelimit.SUBMISSIONS_PER_WINDOW):
        assert post_note_as_sent(site, run, None, htmx=True).status == 200
    for forwarded_for in MALFORMED_FORWARDED_FOR:
        assert post_note_as_sent(site, run, forwarded_for).status == 429, forwarded_for
    assert run.attestations.count() == ratelimit.SUBMISSIONS_PER_WINDOW
