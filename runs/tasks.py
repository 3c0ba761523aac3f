"""Celery tasks: thin, they take ids (or a worker's signed message) and call a service."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.utils import timezone

from records.worker_protocol import MESSAGE_TASK
from runs import collector, dumps, reruns, verification

# Today's dump is written again at most this often, whoever asks (make_daily_dump).
DUMP_REWRITE_AFTER_SECONDS = 3600


@shared_task(name=MESSAGE_TASK, acks_late=True, ignore_result=True)
def collect_worker_message(envelope: Any) -> str | None:
    """A rerun worker's signed message from the results queue (harness/parent/worker.py), for the collector."""
    return collector.collect(envelope)


@shared_task(ignore_result=True)
def sweep_reruns() -> dict[str, int]:
    """The periodic sweep (runs.reruns.sweep_reruns), then the verification policy (runs.verification), which
    queues what it says within each class's budget: idempotent, so a copy sent by anyone changes nothing."""
    swept = reruns.sweep_reruns()
    queued = verification.apply_policy()
    return {"resent": swept.resent, "retried": swept.retried, "failed": swept.failed, "verifying": len(queued)}


@shared_task(ignore_result=True)
def make_daily_dump() -> str:
    """Today's dump of the whole index into DUMPS_DIR (runs/dumps.py); running it again within
    DUMP_REWRITE_AFTER_SECONDS does nothing (`manage.py dump` writes one whenever asked).

    Celery runs a task by its name from any queue the web tier consumes, and a rerun host's broker credential
    can write to one of them (the results queue): however often someone sends this, it costs one dump an hour.
    """
    return str(dumps.make_daily_dump(timezone.now().date(), unless_younger_than=DUMP_REWRITE_AFTER_SECONDS))
