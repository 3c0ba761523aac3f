"""The JSON twins' bodies, shaped from the same contexts the pages render (runs/pages.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest

from records.floor import CaseFloor
from records.sources import SourceInfo
from runs.extensions import TopRunNote
from runs.forms import RunSearchForm
from runs.keyset import KeysetPage
from runs.models import ComparisonGroup, Definition, Run


def _timestamp(value: Any) -> str | None:
    return value.isoformat() if value else None


def utc_text(value: Any) -> str | None:
    """A time as dumps and the worker registry spell it: ISO 8601 in UTC, with a Z."""
    return value.isoformat().replace("+00:00", "Z") if value else None


def floor_json(run: Run, floors: list[CaseFloor | None]) -> dict[str, Any]:
    """The run's physics floor (records.floor): whether a reported time is below it, the worst such claim, and
    each reported case's floor on the run's class, in the order of its cases (null where a case has none)."""
    return {
        "fasterThanPhysicallyPossible": run.faster_than_floor,
        "breach": run.floor_breach if run.faster_than_floor else None,
        "cases": [floor.as_json() if floor else None for floor in floors],
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
        # Where a rerun that reproduced the run measured it slower beyond the tolerance: latencyNs is the rerun's
        # (the figure the run is ranked by) and this the one it reported (records.rerun.ranked_latency).
        "reportedLatencyNs": run.reported_latency_ns,
        "sourceScore": run.source_score,
        # A reported time below the physics floor: the run is ranked after the others (records.floor).
        "fasterThanFloor": run.faster_than_floor,
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
            {**run_summary(run, run.position), **_top_note(run, context.get("top_note"))}
            for run in context["page"].object_list
        ],
    }


def _top_note(run: Run, top: TopRunNote | None) -> Mapping[str, Any]:
    """What another app says of the #1 (runs/extensions.py: its quorum), on its own row of the leaderboard's twin."""
    return top.twin if top is not None and top.run.pk == run.pk else {}


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
                # The case's physics floor (records.floor) on each GPU the page names, in ns.
                "floors": case.floors,
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
