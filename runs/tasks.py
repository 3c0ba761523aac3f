"""Celery tasks: thin, they take ids and call runs.reruns."""

from __future__ import annotations

from celery import shared_task

from runs import reruns


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def execute_rerun(request_id: int) -> None:
    """Run one rerun request; a duplicate or late message finds it claimed and does nothing."""
    reruns.execute_rerun(request_id)


@shared_task(ignore_result=True)
def sweep_reruns() -> dict[str, int]:
    swept = reruns.sweep_reruns()
    return {"resent": swept.resent, "retried": swept.retried, "failed": swept.failed}
