"""Runs and reruns as the JSON twins serve them."""

from __future__ import annotations

from typing import Any

from runs.models import EvidenceChange, Run
from runs.selectors import RerunRow


def _timestamp(value: Any) -> str | None:
    return value.isoformat() if value else None


def evidence_json(run: Run, rule: str, history: list[EvidenceChange]) -> dict[str, Any]:
    return {
        "level": run.evidence,
        "rule": rule,
        "since": _timestamp(history[0].changed_at) if history else None,
        "history": [
            {
                "from": change.previous,
                "to": change.evidence,
                "at": _timestamp(change.changed_at),
                "rerun": change.rerun_id,
            }
            for change in history
        ],
    }


def rerun_json(row: RerunRow) -> dict[str, Any]:
    request = row.request
    result_run = request.result_run
    return {
        "id": request.pk,
        "state": request.state,
        "verdict": request.verdict or None,
        "verdictReason": request.verdict_reason or None,
        "countsForEvidence": row.counts_for_evidence,
        "hardware": request.hardware,
        "hardwareProduct": row.hardware_product or None,
        "reason": request.reason,
        "requestedAt": _timestamp(request.requested_at),
        "startedAt": _timestamp(request.started_at),
        "finishedAt": _timestamp(request.finished_at),
        "attempts": request.attempts,
        "harnessSeconds": request.harness_seconds,
        "failureStatus": request.failure_status or None,
        "failureReason": request.failure_reason or None,
        "latencyNs": row.latency or None,
        "ratioToReported": row.ratio,
        "resultRun": {"runId": result_run.run_id, "url": result_run.get_absolute_url(), "digest": result_run.digest}
        if result_run
        else None,
        "cases": row.cases,
    }
