"""Celery tasks: thin, they take ids and call runs.reruns."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.utils import timezone

from harness.worker import COLLECT_TASK
from runs import collector, dumps, reruns


@shared_task(name=COLLECT_TASK, acks_late=True, ignore_result=True)
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
