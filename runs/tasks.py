"""Celery tasks: thin, they take ids (or a worker's signed message) and call a service."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.utils import timezone

from records.worker_protocol import MESSAGE_TASK
from runs import collector, dumps, reruns


@shared_task(name=MESSAGE_TASK, acks_late=True, ignore_result=True)
def collect_worker_message(envelope: Any) -> str | None:
    """A rerun worker's signed message from the results queue (harness/worker.py), for the collector."""
    return collector.collect(envelope)


@shared_task(ignore_result=True)
def sweep_reruns() -> dict[str, int]:
    swept = reruns.sweep_reruns()
    return {"resent": swept.resent, "retried": swept.retried, "failed": swept.failed}


@shared_task(ignore_result=True)
def make_daily_dump() -> str:
    """Today's dump of the whole index into DUMPS_DIR (runs/dumps.py); running it twice a day rewrites it."""
    return str(dumps.make_daily_dump(timezone.now().date()))
