"""The verification domain's JSON: a run's evidence and reruns as its twin carries them, and a worker's key as
/api/v1/workers and dumps publish it. Shaped from the same contexts the pages render (verification/pages.py)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from records.rerun import RULE_VERSION
from runs.models import Run
from runs.serializers import _timestamp, utc_text
from verification.models import EvidenceChange, WorkerKey
from verification.selectors import RerunRow


def worker_key_json(key: WorkerKey) -> dict[str, Any]:
    """A worker's key as /api/v1/workers and a dump's workers.jsonl.gz publish it (records.attestation.PublishedKey)."""
    return {
        "name": key.name,
        "classes": key.classes,
        "publicKey": key.public_key,
        "keyId": key.key_id,
        "createdAt": utc_text(key.created_at),
        "revokedAt": utc_text(key.revoked_at),
    }


def evidence_json(run: Run, rule: str, history: list[EvidenceChange]) -> dict[str, Any]:
    return {
        "level": run.evidence,
        "rule": rule,
        "ruleVersion": RULE_VERSION,
        "since": _timestamp(history[0].changed_at) if history else None,
        "history": [
            {
                "from": change.previous,
                "to": change.evidence,
                "at": _timestamp(change.changed_at),
                "rerun": change.rerun_id,
                # Without a rerun: the run's version that nothing checked, which took it back to "reported".
                "version": change.version or None,
                "ruleVersion": change.rule_version,
                "tolerance": change.tolerance,
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
        "attemptReasons": request.attempt_history,
        "ruleVersion": request.rule_version,
        "tolerance": request.tolerance,
        "retryAt": _timestamp(request.retry_at),
        "countsForEvidence": row.counts_for_evidence,
        "hardware": request.hardware,
        "hardwareProduct": row.hardware_product or None,
        "reason": request.reason,
        "requestedAt": _timestamp(request.requested_at),
        "startedAt": _timestamp(request.started_at),
        "finishedAt": _timestamp(request.finished_at),
        "attempts": request.attempts,
        "harnessSeconds": request.harness_seconds,
        # The harness version that judged it, with its page (the hostile cases its own suite ran).
        "harness": {
            "version": request.harness_version,
            "digest": request.harness_digest,
            "url": reverse("runs:harness_version", args=[request.harness_digest.removeprefix("sha256:")]),
        }
        if request.harness_digest
        else None,
        "failureStatus": request.failure_status or None,
        "failureReason": request.failure_reason or None,
        "latencyNs": row.latency or None,
        "ratioToReported": row.ratio,
        "resultRun": {"runId": result_run.run_id, "url": result_run.get_absolute_url(), "digest": result_run.digest}
        if result_run
        else None,
        "attestation": reverse("runs:rerun_attestation", args=[request.pk]) if request.attestation_id else None,
        # Verified again as this page was made (with the result run it signs); null where there is none.
        "attestationVerified": row.attestation_verified,
        # When the site took it in: a key revoked later still verifies it (python -m records.attestation verify
        # --recorded-at).
        "attestationRecordedAt": _timestamp(request.attestation.received_at) if request.attestation else None,
        "cases": row.cases,
    }


def run_index_json(run: Run, reruns: dict[str, Any]) -> dict[str, Any]:
    """What the run's manifest carries beside its documents (records.manifest.INDEX_MEMBERS), from
    the reruns section of its page (verification.pages.reruns_section)."""
    return {
        # The quorum (records/quorum.py) beside the level it decides: how many workers reproduced this version.
        "evidence": {
            **evidence_json(run, reruns["evidence_rule"], reruns["evidence_history"]),
            "quorum": reruns["quorum"].as_json(),
        },
        "reruns": [rerun_json(row) for row in reruns["reruns"]],
    }
