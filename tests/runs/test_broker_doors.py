"""The broker's doors, against a real redis-server started with the ACL file records/broker.py writes: what a
rerun worker's credential (its class's Redis user) can do, and what it cannot; and that a pickle planted in
the cache, under the keys the site reads, is never unpickled by the site. deploy/README.md ("The broker over
TLS") quotes these tests, one sentence each.
"""

from __future__ import annotations

import json
import pickle
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from django.core.cache import cache
from django.test import Client, RequestFactory

from harness.parent.worker import make_app, sender
from records import broker
from records.hardware import queue_of
from records.worker_protocol import JOB_TASK, MESSAGE_TASK, RESULTS_QUEUE
from runs.models import Run
from tests.runs.conftest import RedisServer, Worker
from verification.reruns import SWEPT_AT, SweepResult, sweep_reruns
from web.cache import GENERATION_KEY, page_address, page_key, scope_key

CLASS = "cpu"
OTHER_CLASS = "nvidia-h100"
# The cache and the queues in two databases, as deploy/README.md has them; a key pattern spans both.
CACHE_DB, BROKER_DB = 0, 1
CACHE_KEY_PREFIX = "kernelindex"


class Planted:
    """What an attacker stores: a pickle whose loading runs a call, here one that creates a file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


@pytest.fixture
def site_cache(settings: Any, redis_server: RedisServer) -> Any:
    """The site's cache on the test's server, as production configures it, as the web tier's user."""
    settings.CACHES = {
        "default": {
            "BACKEND": "web.redis_cache.RedisCache",
            "LOCATION": redis_server.url(CACHE_DB),
            "KEY_PREFIX": CACHE_KEY_PREFIX,
            "OPTIONS": settings.REDIS_CACHE_OPTIONS,
        }
    }
    return cache


@pytest.fixture
def connect() -> Iterator[Callable[[str], redis.Redis]]:
    """A client for a URL, closed at the end."""
    clients: list[redis.Redis] = []

    def connected(url: str) -> redis.Redis:
        clients.append(redis.Redis.from_url(url))
        return clients[-1]

    yield connected
    for client in clients:
        client.close()


@pytest.fixture
def web(redis_server: RedisServer, connect: Callable[[str], redis.Redis]) -> redis.Redis:
    return connect(redis_server.url(BROKER_DB))


@pytest.fixture
def intruder(redis_server: RedisServer, connect: Callable[[str], redis.Redis]) -> redis.Redis:
    """A client holding what a GPU host of CLASS holds: its broker URL."""
    return connect(redis_server.worker_url(CLASS, BROKER_DB))


@pytest.fixture
def worker_app(redis_server: RedisServer) -> Iterator[Celery]:
    """The rerun worker's own Celery app (harness.worker.make_app) on its class's credential."""
    from kernelindex.celery import app as site_app

    app = make_app(redis_server.worker_url(CLASS, BROKER_DB), None)
    yield app
    app.close()
    site_app.set_current()  # make_app made the worker's app the current one, as a worker process wants


def app_on(url: str, name: str) -> Celery:
    """A Celery app on this URL alone: Celery prefers a CELERY_BROKER_URL in the environment (as CI sets) to the
    `broker` it is given, but not to these."""
    app = Celery(name, set_as_current=False)
    app.conf.update(broker_url=url, broker_read_url=url, broker_write_url=url)
    return app


def refused(call: Callable[[], Any]) -> bool:
    try:
        call()
    except redis.exceptions.NoPermissionError:
        return True
    return False


# -- what a worker's credential cannot do ---------------------------------------------------------------


def test_a_worker_credential_cannot_get_set_list_or_scan_any_cache_key(
    site_cache: Any, redis_server: RedisServer, connect: Callable[[str], redis.Redis]
) -> None:
    site_cache.set(GENERATION_KEY, 7, timeout=None)
    site_cache.set(SWEPT_AT, time.time(), timeout=None)
    # The database number is no door: the worker's URL may name the cache's, and key patterns span them all.
    intruder = connect(redis_server.worker_url(CLASS, CACHE_DB))
    for key in (site_cache.make_key(GENERATION_KEY), site_cache.make_key(SWEPT_AT), site_cache.make_key("pages:1")):
        assert refused(lambda key=key: intruder.get(key))
        assert refused(lambda key=key: intruder.set(key, b"planted"))
        assert refused(lambda key=key: intruder.delete(key))
    assert refused(lambda: intruder.keys("*"))
    assert refused(lambda: intruder.scan(0))
    assert site_cache.get(GENERATION_KEY) == 7


def test_a_worker_credential_cannot_read_or_push_to_another_class_queue_nor_the_sites_own(
    intruder: redis.Redis, web: redis.Redis
) -> None:
    web.lpush(queue_of(OTHER_CLASS), b"a job")
    for queue in (queue_of(OTHER_CLASS), "celery"):  # another class's, and the web tier's default queue
        assert refused(lambda queue=queue: intruder.lpush(queue, b"forged"))
        assert refused(lambda queue=queue: intruder.rpop(queue))
        assert refused(lambda queue=queue: intruder.brpop([queue], timeout=1))
        assert refused(lambda queue=queue: intruder.lrange(queue, 0, -1))
        assert refused(lambda queue=queue: intruder.llen(queue))
    assert web.lrange(queue_of(OTHER_CLASS), 0, -1) == [b"a job"]
    assert web.llen("celery") == 0


def test_a_worker_credential_can_push_to_the_results_queue_but_not_read_it(
    intruder: redis.Redis, web: redis.Redis
) -> None:
    web.lpush(RESULTS_QUEUE, b"another worker's result")
    assert intruder.lpush(RESULTS_QUEUE, b"a message") == 2
    assert refused(lambda: intruder.lrange(RESULTS_QUEUE, 0, -1))
    assert refused(lambda: intruder.rpop(RESULTS_QUEUE))
    assert refused(lambda: intruder.brpop([RESULTS_QUEUE], timeout=1))
    assert refused(lambda: intruder.lindex(RESULTS_QUEUE, 0))
    assert refused(lambda: intruder.delete(RESULTS_QUEUE))
    assert web.lrange(RESULTS_QUEUE, 0, -1) == [b"a message", b"another worker's result"]


@pytest.mark.parametrize(
    "command",
    [
        ("FLUSHDB",),
        ("FLUSHALL",),
        ("CONFIG", "GET", "*"),
        ("CONFIG", "SET", "appendonly", "yes"),
        ("ACL", "LIST"),
        ("ACL", "SETUSER", "kernelindex-worker-cpu", "+@all", "~*"),
        ("EVAL", "return redis.call('GET', KEYS[1])", "1", "kernelindex:1:pages:generation"),
        ("SCRIPT", "LOAD", "return 1"),
        ("FUNCTION", "LIST"),
        ("MODULE", "LIST"),
        ("DEBUG", "SLEEP", "0"),
        ("SUBSCRIBE", "/0.celery.pidbox"),
        ("PSUBSCRIBE", "*"),
        ("PUBLISH", "/1.celery.pidbox", "{}"),
        ("CLIENT", "LIST"),
        ("INFO",),
    ],
    ids=lambda command: " ".join(command[:2]),
)
def test_a_worker_credential_cannot_administer_script_or_subscribe(
    intruder: redis.Redis, command: tuple[str, ...]
) -> None:
    assert refused(lambda: intruder.execute_command(*command))


# -- what it can do, as the rerun worker does it -----------------------------------------------------------


def test_a_worker_takes_its_class_jobs_and_sends_to_the_results_queue_with_its_own_app(
    redis_server: RedisServer, worker_app: Celery, web: redis.Redis
) -> None:
    site = app_on(redis_server.url(BROKER_DB), "site")
    site.conf.broker_transport_options = broker.SHARED_TRANSPORT_OPTIONS  # as the site's settings route
    site.send_task(JOB_TASK, args=({"job": "signed by the site"},), queue=queue_of(CLASS))
    site.close()
    taken: list[Any] = []
    with worker_app.connection_for_read() as connection:
        queue = worker_app.amqp.queues[queue_of(CLASS)]

        def take(body: Any, message: Any) -> None:
            taken.append(body)
            message.ack()

        with connection.Consumer(queue, callbacks=[take], accept=["json"]):
            connection.drain_events(timeout=10)
    assert taken[0][0] == [{"job": "signed by the site"}]
    assert sender(worker_app)({"type": "beat"}) is True
    (sent,) = web.lrange(RESULTS_QUEUE, 0, -1)
    assert json.loads(sent)["headers"]["task"] == MESSAGE_TASK
    assert web.keys("unacked*") == []  # the worker keeps no shared bookkeeping (records/broker.py)


def test_a_worker_app_cannot_consume_another_class_queue(worker_app: Celery) -> None:
    with worker_app.connection_for_read() as connection:
        queue = worker_app.amqp.queues[queue_of(OTHER_CLASS)]
        with pytest.raises(redis.exceptions.NoPermissionError), connection.Consumer(queue, accept=["json"]):
            connection.drain_events(timeout=5)


# -- a pickle planted in the cache ----------------------------------------------------------------------


def test_a_pickle_planted_under_the_keys_the_site_reads_is_never_unpickled(
    site_cache: Any,
    client: Client,
    run: Run,
    redis_server: RedisServer,
    connect: Callable[[str], redis.Redis],
    tmp_path: Path,
) -> None:
    url = run.get_absolute_url()
    assert client.get(url).status_code == 200  # cached
    marker = tmp_path / "unpickled"
    planted = pickle.dumps(Planted(marker))
    slot = page_key(page_address(RequestFactory().get(url)))
    # Planted as whoever reaches the cache would (here the web tier's user: a worker's cannot, above).
    web = connect(redis_server.url(CACHE_DB))
    for key in (slot, GENERATION_KEY, scope_key(f"run:{run.run_id}"), SWEPT_AT):
        assert web.set(site_cache.make_key(key), planted)
    response = client.get(url)
    assert response.status_code == 200
    assert run.run_id in response.content.decode()
    assert sweep_reruns() == SweepResult()
    assert not marker.exists()
    # Rendered again and kept as JSON; the planted generation replaced.
    assert type(site_cache.get(GENERATION_KEY)) is int
    assert client.get(url).content == response.content


def test_the_web_tiers_worker_refuses_a_pickled_message_on_its_queues(
    redis_server: RedisServer, worker: Worker, tmp_path: Path
) -> None:
    marker = tmp_path / "unpickled"
    # Sent on the results queue with a worker's credential, and on the default queue with the web tier's.
    for url, queue in ((redis_server.worker_url(CLASS, 0), RESULTS_QUEUE), (redis_server.url(0), "celery")):
        attacker = app_on(url, "attacker")
        attacker.conf.broker_transport_options = broker.WORKER_TRANSPORT_OPTIONS
        attacker.send_task(MESSAGE_TASK, args=(Planted(marker),), queue=queue, serializer="pickle", declare=[])
        attacker.close()
    refusal = "Received invalid task message: Refusing to deserialize untrusted content of type pickle"
    deadline = time.monotonic() + 60
    while worker.web.log().count(refusal) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert worker.web.log().count(refusal) == 2, worker.web.log()[-3000:]
    assert not marker.exists()


def test_deploys_readme_quotes_only_tests_that_exist() -> None:
    """Its sentences about what a host can do each name the test that proves it: a bare name is a test of this
    file, `tests/…py::name` one of that file."""
    root = Path(__file__).resolve().parents[2]
    readme = (root / "deploy" / "README.md").read_text()
    section = readme[readme.index("## The broker over TLS") :]
    quoted = set(re.findall(r"`(test_[a-z_]+)`", section))
    assert quoted
    assert quoted <= {name for name in globals() if name.startswith("test_")}
    elsewhere = re.findall(r"`(tests/[a-z_/]+\.py)::(test_[a-z_]+)`", section)
    assert elsewhere
    for path, name in elsewhere:
        assert re.search(rf"^def {name}\(", (root / path).read_text(), flags=re.MULTILINE), f"{path}::{name}"
