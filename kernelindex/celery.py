"""The Celery app. Workers start with `celery -A kernelindex worker`.

A worker started without -Q consumes the default queue (the periodic sweep)
and the rerun queue of the hardware it runs on (`reruns.cpu`,
`reruns.nvidia-h100`, ...), so joining a GPU host is one command.
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
def consume_own_hardware_queue(sender: str, instance: Any, **kwargs: Any) -> None:
    queues = instance.app.amqp.queues
    # Celery keeps the -Q selection here (None without -Q); with -Q the operator has chosen.
    if getattr(queues, "_consume_from", None) is not None:
        return
    from harness.environment import detect_hardware_class

    name = f"reruns.{detect_hardware_class()}"
    queues.select_add(name)
    logger.warning("worker %s consumes %s", sender, ", ".join(sorted(queues)))
