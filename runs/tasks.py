"""Celery tasks: thin, they take ids and call runs.reruns."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from runs import dumps, reruns


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def execute_rerun(request_id: int) -> None:
    """Run one rerun request; a duplicate or late message finds it claimed and does nothing."""
    reruns.execute_rerun(request_id)


@shared_task(ignore_result=True)
def sweep_reruns() -> dict[str, int]:
    swept = reruns.sweep_reruns()
    return {"resent": swept.resent, "retried": swept.retried, "failed": swept.failed}


@shared_task(ignore_result=True)
def make_daily_dump() -> str:
    """Today's dump of the whole index into DUMPS_DIR (runs/dumps.py); running it twice a day rewrites it."""
    return str(dumps.make_daily_dump(timezone.now().date()))
