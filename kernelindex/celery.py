"""The Celery app. Workers start with `celery -A kernelindex worker`.

A worker started without -Q consumes the default queue (the periodic sweep)
and the rerun queue of the hardware it runs on (`reruns.cpu`,
`reruns.nvidia-h100`, ...; the classes are records.sources.hardware's registry),
so joining a GPU host is one command. While it runs it writes a heartbeat for
the classes it serves (runs.models.RerunWorker), which the pages read.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import celeryd_after_setup, worker_ready, worker_shutdown

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
    from records.sources.hardware import UnknownHardwareClassError, hardware_class_named

    try:
        hardware = hardware_class_named(detect_hardware_class())
    except UnknownHardwareClassError as unknown:
        logger.error("worker %s serves no rerun queue: %s", sender, unknown)
        return
    queues.select_add(hardware.queue)
    logger.warning("worker %s consumes %s", sender, ", ".join(sorted(queues)))


_heartbeat: Any = None


@worker_ready.connect
def start_heartbeat(sender: Any, **kwargs: Any) -> None:
    """Beat for each hardware class whose rerun queue this worker consumes, so pages can say who is live."""
    global _heartbeat
    from records.sources.hardware import QUEUE_PREFIX
    from runs.reruns import WorkerHeartbeat

    consumed = sender.app.amqp.queues.consume_from or sender.app.amqp.queues
    classes = sorted(name.removeprefix(QUEUE_PREFIX) for name in consumed if name.startswith(QUEUE_PREFIX))
    if classes:
        _heartbeat = WorkerHeartbeat(sender.hostname, classes)
        _heartbeat.start()


@worker_shutdown.connect
def stop_heartbeat(sender: Any, **kwargs: Any) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()
