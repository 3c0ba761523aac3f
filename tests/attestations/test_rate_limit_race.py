"""Racing submissions cannot beat the limit: the counter is atomic in the real cache (Redis).

The file cache of a laptop setup does not promise an atomic increment, so these
tests need REDIS_URL; CI runs them against Redis.
"""

from __future__ import annotations

import http.client
import os
import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from attestations.models import Attestation
from runs.models import Run
from tests.attestations.form_data import note_data
from web import ratelimit

RACERS = 20

pytestmark = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="needs Redis (REDIS_URL): the file cache's incr is not atomic"
)


def test_racing_threads_get_exactly_the_allowance() -> None:
    start = threading.Barrier(RACERS)

    def race(_: int) -> int:
        start.wait()
        return ratelimit.take("race-test", limit=ratelimit.SUBMISSIONS_PER_WINDOW)

    with ThreadPoolExecutor(RACERS) as pool:
        waits = list(pool.map(race, range(RACERS)))
    assert waits.count(0) == ratelimit.SUBMISSIONS_PER_WINDOW
    assert all(0 < wait <= ratelimit.WINDOW_SECONDS for wait in waits if wait)


def test_racing_posts_to_a_live_server_get_five_notes_in(live_server: Any, transactional_db: None, run: Run) -> None:
    url = urlsplit(f"{live_server.url}/runs/{run.run_id}/notes")
    cookie, token = csrf_token(url.hostname or "", url.port or 80, url.path)
    body = urlencode(note_data() | {"csrfmiddlewaretoken": token})
    start = threading.Barrier(RACERS)

    def post(_: int) -> int:
        connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=60)
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={cookie}"}
        start.wait()
        connection.request("POST", url.path, body, headers)
        status = connection.getresponse().status
        connection.close()
        return status

    with ThreadPoolExecutor(RACERS) as pool:
        statuses = Counter(pool.map(post, range(RACERS)))
    assert statuses == {302: ratelimit.SUBMISSIONS_PER_WINDOW, 429: RACERS - ratelimit.SUBMISSIONS_PER_WINDOW}
    assert Attestation.objects.filter(run=run).count() == ratelimit.SUBMISSIONS_PER_WINDOW


def csrf_token(host: str, port: int, path: str) -> tuple[str, str]:
    """The cookie and form token a browser gets from the form's page."""
    connection = http.client.HTTPConnection(host, port, timeout=60)
    connection.request("GET", path)
    response = connection.getresponse()
    page = response.read().decode()
    cookie = re.search(r"csrftoken=([^;]+)", response.getheader("Set-Cookie") or "")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert cookie and token
    return cookie.group(1), token.group(1)
