"""Celery tasks: thin, they take ids and call a service. The reruns' are verification's (verification/tasks.py)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from runs import dumps

# Today's dump is written again at most this often, whoever asks (make_daily_dump).
DUMP_REWRITE_AFTER_SECONDS = 3600


@shared_task(ignore_result=True)
def make_daily_dump() -> str:
    """Today's dump of the whole index into DUMPS_DIR (runs/dumps.py); running it again within
    DUMP_REWRITE_AFTER_SECONDS does nothing (`manage.py dump` writes one whenever asked).

    Celery runs a task by its name from any queue the web tier consumes, and a rerun host's broker credential
    can write to one of them (the results queue): however often someone sends this, it costs one dump an hour.
    """
    return str(dumps.make_daily_dump(timezone.now().date(), unless_younger_than=DUMP_REWRITE_AFTER_SECONDS))
