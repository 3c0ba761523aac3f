"""A count whose SQL is written once (runs.prepared) counts what the ORM's own count does, with every value bound."""

from __future__ import annotations

import math
from pathlib import Path

from django.db import connection
from django.db.models import CharField, FloatField, IntegerField
from django.test.utils import CaptureQueriesContext

from runs.models import RANKED, Run
from runs.prepared import PreparedCount, Slot
from tests.conftest import ImportRuns
from tests.pages import sol_records, write_jsonl


def test_a_prepared_count_matches_the_orms_count_for_every_value(import_runs: ImportRuns, tmp_path: Path) -> None:
    import_runs(write_jsonl(tmp_path / "runs.jsonl", sol_records(12)))
    Run.objects.filter(pk__in=Run.objects.order_by("latency_ns").values("pk")[:3]).update(status="failed")
    group_id = Run.objects.values_list("group_id", flat=True).first()
    faster = PreparedCount(
        Run,
        lambda: Run.objects.filter(
            RANKED,
            group_id=Slot("group", IntegerField()),
            latency_ns__lt=Slot("latency", FloatField()),
            latency_ns__gte=Slot("mark", FloatField()),
        ),
    )
    latencies = sorted(Run.objects.values_list("latency_ns", flat=True))
    for latency in latencies:
        for mark in (-math.inf, latencies[4], latency):
            by_orm = Run.objects.filter(RANKED, group_id=group_id, latency_ns__lt=latency, latency_ns__gte=mark)
            assert faster(group=group_id, latency=latency, mark=mark) == by_orm.count(), (latency, mark)
    assert faster(group=group_id + 1, latency=math.inf, mark=-math.inf) == 0  # another group's runs: none


def test_a_prepared_counts_values_are_bound_never_pasted_into_its_sql(import_runs: ImportRuns, tmp_path: Path) -> None:
    import_runs(write_jsonl(tmp_path / "runs.jsonl", sol_records(3)))
    title = Run.objects.values_list("title", flat=True).first()
    titled = PreparedCount(Run, lambda: Run.objects.filter(title=Slot("title", CharField())))
    assert titled(title=title) == 1
    # Were a value pasted into the SQL, these would count every run (or fail as SQL).
    assert titled(title="x' OR '1'='1") == 0
    assert titled(title="x') OR ('1'='1") == 0
    with CaptureQueriesContext(connection) as captured:
        titled(title=title)
    assert len(captured.captured_queries) == 1
