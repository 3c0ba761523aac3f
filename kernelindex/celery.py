"""The web tier's Celery app. Its worker starts with `celery -A kernelindex worker -B` beside the site.

A worker started without -Q consumes the default queue (the periodic sweep,
the daily dump) and the results queue (`kernelindex.results`), where rerun
workers send their signed messages for the collector (verification/collector.py). It
runs no kernel and serves no rerun queue: a rerun worker is `python -m
harness.worker`, which holds no database and consumes the queue of its hardware
class (`reruns.cpu`, `reruns.nvidia-h100`, ...); the site only sends to those.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import celeryd_after_setup

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelindex.settings")

app = Celery("kernelindex")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger(__name__)


@celeryd_after_setup.connect
def consume_results_queue(sender: str, instance: Any, **kwargs: Any) -> None:
    queues = instance.app.amqp.queues
    # Celery keeps the -Q selection here (None without -Q); with -Q the operator has chosen.
    if getattr(queues, "_consume_from", None) is not None:
        return
    from records.worker_protocol import RESULTS_QUEUE

    queues.select_add(RESULTS_QUEUE)
    logger.warning("worker %s consumes %s", sender, ", ".join(sorted(queues)))
