"""Figures kept on rows at write time, so that pages read them instead of counting.

A comparison group keeps its listed runs, its ranked runs (models.RANKED: passed
or measured, a latency, not withdrawn, not "not reproduced") and the fastest of
those; a run keeps how many reruns, evidence changes and approved notes it has.
Every writer that changes what they count calls one of these two functions in
its transaction (the importer, withdraw and restore, a rerun's request and
verdict, reevaluation, moderation of notes). Each recomputes from the rows
rather than adding one, so a writer that runs twice, or a figure that drifted,
comes out right.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from runs.models import LISTED, RANKED, ComparisonGroup, EvidenceChange, RerunRequest, Run


def refresh_group_figures(group_ids: Iterable[int]) -> None:
    """Recount these groups' figures: one aggregate over their runs, and each group's #1 from its index."""
    ids = sorted(set(group_ids))
    if not ids:
        return
    counts = {
        row["group_id"]: row
        for row in Run.objects.filter(group_id__in=ids)
        .order_by()
        .values("group_id")
        .annotate(listed=Count("pk", filter=LISTED), ranked=Count("pk", filter=RANKED))
    }
    groups = list(ComparisonGroup.objects.filter(pk__in=ids).only("pk"))
    for group in groups:
        best = Run.objects.ranked().filter(group_id=group.pk).order_by("latency_ns", "run_id")
        group.best_run_id, group.best_latency_ns = best.values_list("pk", "latency_ns").first() or (None, None)
        group.run_count = counts.get(group.pk, {}).get("listed", 0)
        group.ranked_count = counts.get(group.pk, {}).get("ranked", 0)
    ComparisonGroup.objects.bulk_update(groups, ["run_count", "ranked_count", "best_run", "best_latency_ns"])


RUN_COUNTERS = ("rerun_count", "evidence_change_count", "note_count")


def refresh_run_counters(run_ids: Iterable[int]) -> None:
    """Recount what the run page lists for these runs from runs' own rows: reruns and evidence changes.

    Its approved notes (note_count) are attestations' rows, counted there (attestations.models.count_notes):
    attestations depends on runs, never the other way round.
    """
    ids = sorted(set(run_ids))
    if not ids:
        return
    Run.objects.filter(pk__in=ids).update(
        rerun_count=count_per_run(RerunRequest.objects.all()),
        evidence_change_count=count_per_run(EvidenceChange.objects.all()),
    )


def count_per_run(rows: QuerySet[Any]) -> Coalesce:
    """How many of `rows` each run has, as an expression for an UPDATE of runs."""
    per_run = rows.filter(run_id=OuterRef("pk")).order_by().values("run_id").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(per_run, output_field=IntegerField()), Value(0))
