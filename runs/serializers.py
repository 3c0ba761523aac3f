"""The JSON twins' bodies, shaped from the same contexts the pages render (runs/pages.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.urls import reverse

from records.quorum import Quorum
from records.rerun import RULE_VERSION
from records.sources import SourceInfo
from runs.forms import RunSearchForm
from runs.keyset import KeysetPage
from runs.models import ComparisonGroup, Definition, EvidenceChange, Run, WorkerKey
from runs.selectors import RerunRow


def _timestamp(value: Any) -> str | None:
    return value.isoformat() if value else None


def utc_text(value: Any) -> str | None:
    """A time as dumps and the worker registry spell it: ISO 8601 in UTC, with a Z."""
    return value.isoformat().replace("+00:00", "Z") if value else None


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
    the reruns section of its page (pages.reruns_section)."""
    return {
        # The quorum (records/quorum.py) beside the level it decides: how many workers reproduced this version.
        "evidence": {
            **evidence_json(run, reruns["evidence_rule"], reruns["evidence_history"]),
            "quorum": reruns["quorum"].as_json(),
        },
        "reruns": [rerun_json(row) for row in reruns["reruns"]],
    }


# -- lists of runs -----------------------------------------------------------------


def run_summary(run: Run, position: int | None = None) -> dict[str, Any]:
    """A run as list pages serve it in JSON."""
    summary = {
        "runId": run.run_id,
        "url": run.get_absolute_url(),
        "source": run.source,
        "externalId": run.external_id,
        "digest": run.digest,
        "definition": run.definition.name if run.definition else None,
        "implementation": run.implementation_name,
        "hardware": run.hardware,
        "status": run.status,
        "evidence": run.evidence,
        "primaryStatistic": run.primary_statistic,
        "latencyNs": run.latency_ns,
        "sourceScore": run.source_score,
        "observedAt": _timestamp(run.observed_at),
        "publishedAt": run.published_at.isoformat(),
    }
    if position is not None or hasattr(run, "position"):
        summary["rank"] = position
    return summary


def pagination_json(request: HttpRequest, page: KeysetPage) -> dict[str, Any]:
    """The page's place in its list, and absolute links to the next page (its cursor) and the first.

    `count` is exact unless `countIsLowerBound`: then the list holds more than `count` runs (search and
    filtered lists count no further than runs.search.COUNT_BOUND).
    """

    def link(after: str | None) -> str:
        query = request.GET.copy()
        query.pop("after", None)
        if after:
            query["after"] = after
        return request.build_absolute_uri(f"{request.path}?{query.urlencode()}" if query else request.path)

    return {
        "count": page.total,
        "countIsLowerBound": page.more,
        "first": page.first_index,
        "last": page.last_index,
        "next": link(page.next_cursor) if page.next_cursor else None,
        "start": link(None) if page.has_previous else None,
    }


def search_json(request: HttpRequest, form: RunSearchForm, page: KeysetPage) -> dict[str, Any]:
    return {
        **pagination_json(request, page),
        "filters": {name: value for name, value in form.cleaned_data.items() if value},
        "errors": {name: [str(e) for e in errors] for name, errors in form.errors.items()},
        "runs": [run_summary(run) for run in page.object_list],
    }


def source_json(request: HttpRequest, context: dict[str, Any]) -> dict[str, Any]:
    source: SourceInfo = context["source"]
    return {
        "key": source.key,
        "title": source.title,
        "url": source.url,
        "description": source.description,
        "definitions": context["definition_count"],
        **pagination_json(request, context["page"]),
        "runs": [run_summary(run) for run in context["page"].object_list],
    }


# -- groups, definitions, compare ----------------------------------------------------


@dataclass(frozen=True)
class TopQuorum:
    """A leaderboard's #1 and its quorum: the row that says "reproduced by 1 of 2 workers"."""

    run: Run
    quorum: Quorum


def group_json(request: HttpRequest, context: dict[str, Any]) -> dict[str, Any]:
    group: ComparisonGroup = context["group"]
    board = context["board"]
    return {
        "key": group.key,
        "definition": group.definition.name if group.definition else None,
        "hardware": group.hardware,
        "architecture": group.architecture,
        "comparabilityFamily": group.family,
        "harness": group.harness,
        "harnessVersion": group.harness_version,
        "order": "source-native" if context["source_order"] else "latency",
        "references": [
            {"kind": ref.kind, "label": ref.get_kind_display(), "latencyNs": ref.latency_ns}
            for ref in context["references"]
        ],
        "board": {"scores": board.scores, "topScore": board.top_score, "topUser": board.top_user} if board else None,
        **pagination_json(request, context["page"]),
        "runs": [
            {**run_summary(run, run.position), **_top_quorum(run, context.get("top_quorum"))}
            for run in context["page"].object_list
        ],
    }


def _top_quorum(run: Run, top: TopQuorum | None) -> dict[str, Any]:
    """The #1's quorum (records/quorum.py), on its own row of the leaderboard's twin."""
    return {"quorum": top.quorum.as_json()} if top is not None and top.run.pk == run.pk else {}


def definition_json(context: dict[str, Any]) -> dict[str, Any]:
    definition: Definition = context["definition"]
    return {
        "source": definition.source,
        "name": definition.name,
        "externalId": definition.external_id,
        "title": definition.title,
        "description": definition.description,
        "subset": definition.subset,
        "axes": definition.axes,
        "inputs": definition.inputs,
        "outputs": definition.outputs,
        "cases": [
            {
                "index": case.index,
                "uuid": case.uuid,
                "axes": case.axes,
                "tolerance": case.tolerance,
                "references": case.references,
            }
            for case in context["cases"]
        ],
        "groups": [
            {
                "key": group.key,
                "url": group.get_absolute_url(),
                "hardware": group.hardware,
                "harness": group.harness,
                "harnessVersion": group.harness_version,
                "comparabilityFamily": group.family,
                "runs": group.run_count,
                "bestLatencyNs": group.best_latency,
            }
            for group in context["groups"]
        ],
    }


def compare_json(context: dict[str, Any]) -> dict[str, Any]:
    return {
        "a": run_summary(context["a"]),
        "b": run_summary(context["b"]),
        "latencyRatio": context["ratio"],
        "sameComparisonGroup": context["same_group"],
        "reasons": context["reasons"],
        "metrics": [{"name": n, "a": x, "b": y} for n, x, y in context["metrics"]],
        "differences": {
            role: [{"path": p, "a": x, "b": y} for p, x, y in rows] for role, rows in context["differences"]
        },
    }
