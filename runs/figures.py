"""Figures kept on rows at write time, so that pages read them instead of counting.

A comparison group keeps its listed runs, its ranked runs (models.RANKED: passed
or measured, a latency, not withdrawn, not "not reproduced"), the fastest of
those, and, in a large group, its rank marks (below); a run keeps how many
versions of its record, reruns, evidence changes and approved notes it has.
Every writer that changes what they count calls one of these functions in
its transaction (the importer and a dump's restore, withdraw and restore, a
rerun's request and verdict, reevaluation, moderation of notes). Each recomputes from the rows
rather than adding one, so a writer that runs twice, or a figure that drifted,
comes out right.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Count, F, IntegerField, OuterRef, QuerySet, Subquery, Value, Window
from django.db.models.functions import Coalesce, Rank, RowNumber

from runs.models import LISTED, RANKED, ComparisonGroup, Run, RunVersion


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
        fastest = best.values_list("pk", "run_id", "latency_ns").first() or (None, "", None)
        group.best_run_id, group.best_run_run_id, group.best_latency_ns = fastest
        group.run_count = counts.get(group.pk, {}).get("listed", 0)
        group.ranked_count = counts.get(group.pk, {}).get("ranked", 0)
        group.rank_marks = rank_marks(Run.objects.ranked().filter(group_id=group.pk), group.ranked_count)
    ComparisonGroup.objects.bulk_update(
        groups, ["run_count", "ranked_count", "best_run", "best_run_run_id", "best_latency_ns", "rank_marks"]
    )


# A run's rank is 1 + the ranked runs faster than it: a count in the group's ranked index that, in the middle
# of a group of 10^5 runs, reads 5 * 10^4 entries (3-5 ms, the one part of a cold run page that grew with the
# data). A large group keeps a mark every RANK_MARK_EVERY ranked runs: the mark's latency and how many ranked
# runs are faster than that, so that the count starts at the nearest mark below the run and reads at most
# about RANK_MARK_EVERY entries (runs.selectors.faster_in). A group of fewer ranked runs than RANK_MARKS_FROM
# keeps none: its whole count is as short.
RANK_MARK_EVERY = 1000
RANK_MARKS_FROM = 5000


def rank_marks(ranked: QuerySet[Any], count: int) -> list[list[float | int]]:
    """[latency, ranked runs faster than it] for the 1st, (1 + RANK_MARK_EVERY)th, ... of `ranked` (one group's
    ranked runs, `count` of them) in latency order; none for a group smaller than RANK_MARKS_FROM.

    One pass over the group's ranked index, the marks picked by row number. Takes the queryset, rather than a
    group, so that a migration can fill the marks from its historical models."""
    if count < RANK_MARKS_FROM:
        return []
    numbered = ranked.annotate(
        faster=Window(Rank(), order_by=F("latency_ns").asc()) - 1,
        row=Window(RowNumber(), order_by=[F("latency_ns").asc(), F("run_id").asc()]),
    )
    marked = numbered.filter(row__in=range(1, count + 1, RANK_MARK_EVERY)).order_by("row")
    return [[latency, faster] for latency, faster in marked.values_list("latency_ns", "faster")]


# Counted by the apps whose rows they count: reruns and evidence changes by verification
# (verification.figures.refresh_run_counters), approved notes by attestations (attestations.models.count_notes).
RUN_COUNTERS = ("rerun_count", "evidence_change_count", "note_count")


def refresh_version_counts(run_ids: Iterable[int]) -> None:
    """Recount the stored versions of these runs' records: the writers that add versions call it (the
    importer, for the runs a file changed; a dump's restore)."""
    ids = sorted(set(run_ids))
    if ids:
        Run.objects.filter(pk__in=ids).update(version_count=count_per_run(RunVersion.objects.all()))


def count_per_run(rows: QuerySet[Any]) -> Coalesce:
    """How many of `rows` each run has, as an expression for an UPDATE of runs."""
    per_run = rows.filter(run_id=OuterRef("pk")).order_by().values("run_id").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(per_run, output_field=IntegerField()), Value(0))
