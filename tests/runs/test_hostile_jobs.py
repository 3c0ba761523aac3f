"""A queued job rewritten by whoever holds a rerun host's broker credential, through the real Redis users, a real
rerun worker and the real collector: the worker drops it unrun, and the rerun the site asked for still runs, once,
with the options it was asked with.

(The finding: a copy of a queued job with precision 0.05 -> 0.9 and case budget 4 -> 0.2 s was run by the honest
worker, which dropped the original, and the collector recorded its result.)"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User

from records.canonical import canonical_bytes
from records.hardware import queue_of
from runs.models import Run
from tests.runs.conftest import RedisServer, Worker, wait_for
from verification.models import RerunRequest
from verification.reruns import request_rerun

pytestmark = pytest.mark.django_db(transaction=True)


def rewritten(raw: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    """A queued Celery message with its job's signed payload changed and the site's signature kept."""
    message = json.loads(raw)
    args, kwargs, embed = json.loads(base64.b64decode(message["body"]))
    envelope = args[0]
    job = json.loads(base64.b64decode(envelope["payload"]))
    change(job)
    envelope["payload"] = base64.b64encode(canonical_bytes(job)).decode()
    message["body"] = base64.b64encode(json.dumps([[envelope], kwargs, embed]).encode()).decode()
    return json.dumps(message).encode()


def cheaper(job: dict[str, Any]) -> None:
    job["harness"] |= {"precision": 0.9, "case-budget": 0.2, "timeout": 5}


def test_a_job_rewritten_on_the_broker_is_dropped_and_the_requested_one_runs_once(
    moderator: User, demo: Callable[[str], Run], worker: Worker, redis_server: RedisServer
) -> None:
    worker.rerun.stop()  # the job waits on the queue, where the broker's holder finds it
    run = demo("rmsnorm-vectorised")
    request = request_rerun(run, user=moderator)
    queue = queue_of(request.hardware)
    host = redis.Redis.from_url(redis_server.worker_url(request.hardware))
    taken = host.brpop([queue], timeout=10)
    assert taken is not None, "the job never reached its class's queue"
    host.lpush(queue, rewritten(taken[1], cheaper))
    host.close()

    worker.rerun.start()
    wait_for(request)
    request.refresh_from_db()
    assert "a job refused: not a job the site signed: the signature does not verify" in worker.rerun.log()
    # The sweep sent the genuine job again; it ran, once, with the options the request was asked with.
    assert request.state == "succeeded", request.failure_reason + worker.log()[-3000:]
    assert request.attestations.count() == 1 and request.attestation is not None
    attested = request.attestation.verified()
    assert attested is not None and attested.predicate.harnessOptions == request.harness_options
    assert request.harness_options["precision"] != 0.9
    assert RerunRequest.objects.filter(run=run).count() == 1
