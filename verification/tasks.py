"""Celery tasks of the verification domain: thin, they take a worker's signed message or nothing, and call a
service.

Their registered names are runs' from before the move (runs.tasks.*): deployed workers, the beat schedule
(CELERY_BEAT_SCHEDULE) and messages already queued name them so.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from records.worker_protocol import MESSAGE_TASK
from verification import collector, policy, reruns


@shared_task(name=MESSAGE_TASK, acks_late=True, ignore_result=True)
def collect_worker_message(envelope: Any) -> str | None:
    """A rerun worker's signed message from the results queue (harness/parent/worker.py), for the collector."""
    return collector.collect(envelope)


@shared_task(name="runs.tasks.sweep_reruns", ignore_result=True)
def sweep_reruns() -> dict[str, int]:
    """The periodic sweep (verification.reruns.sweep_reruns), then the verification policy (verification.policy),
    which queues what it says within each class's budget: idempotent, so a copy sent by anyone changes nothing."""
    swept = reruns.sweep_reruns()
    queued = policy.apply_policy()
    return {"resent": swept.resent, "retried": swept.retried, "failed": swept.failed, "verifying": len(queued)}
