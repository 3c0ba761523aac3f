from __future__ import annotations

import django.db.models.deletion
from django.contrib.postgres.indexes import GistIndex, OpClass
from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, Upper

from runs.migration_operations import AddIndexOnPostgreSQL

RANKABLE_STATUSES = ("passed", "measured")
LISTED = Q(withdrawn_at=None)
RANKABLE = LISTED & Q(status__in=RANKABLE_STATUSES, latency_ns__isnull=False)
NOT_REPRODUCED = Q(evidence="not_reproduced")
DATED = Coalesce("observed_at", "published_at")


def fill_figures(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """The kept figures of the groups and runs already stored, as runs.figures keeps them from now on."""
    Run = apps.get_model("runs", "Run")
    ComparisonGroup = apps.get_model("runs", "ComparisonGroup")
    for group in ComparisonGroup.objects.all():
        runs = Run.objects.filter(group_id=group.pk)
        best = runs.filter(RANKABLE & ~NOT_REPRODUCED).order_by("latency_ns", "run_id").first()
        group.run_count = runs.filter(LISTED).count()
        group.ranked_count = runs.filter(RANKABLE & ~NOT_REPRODUCED).count()
        group.best_run_id = best.pk if best else None
        group.best_latency_ns = best.latency_ns if best else None
        group.save(update_fields=["run_count", "ranked_count", "best_run", "best_latency_ns"])
    counted = [
        ("rerun_count", apps.get_model("runs", "RerunRequest").objects.all()),
        ("evidence_change_count", apps.get_model("runs", "EvidenceChange").objects.all()),
        ("note_count", apps.get_model("attestations", "Attestation").objects.filter(status="approved")),
    ]
    for field, rows in counted:
        per_run = rows.filter(run_id=OuterRef("pk")).order_by().values("run_id").annotate(n=Count("pk")).values("n")
        Run.objects.filter(pk__in=rows.values("run_id")).update(**{field: Subquery(per_run)})


class Migration(migrations.Migration):
    """Per-group figures and run counters kept at write time, keyset indexes for lists and leaderboards,
    and trigram indexes for search (PostgreSQL only)."""

    dependencies = [
        ("runs", "0006_rule_version_and_workers"),
        ("attestations", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="comparisongroup",
            name="run_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="comparisongroup",
            name="ranked_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="comparisongroup",
            name="best_latency_ns",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="comparisongroup",
            name="best_run",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="runs.run",
            ),
        ),
        migrations.AddField(model_name="run", name="rerun_count", field=models.PositiveIntegerField(default=0)),
        migrations.AddField(
            model_name="run", name="evidence_change_count", field=models.PositiveIntegerField(default=0)
        ),
        migrations.AddField(model_name="run", name="note_count", field=models.PositiveIntegerField(default=0)),
        migrations.RemoveIndex(model_name="run", name="run_group_rankable"),
        migrations.RemoveIndex(model_name="run", name="run_group_unranked"),
        migrations.RemoveIndex(model_name="run", name="run_group_source_rank"),
        migrations.RemoveIndex(model_name="run", name="run_newest"),
        migrations.RemoveIndex(model_name="run", name="run_definition"),
        migrations.RemoveIndex(model_name="run", name="run_source_newest"),
        migrations.RemoveIndex(model_name="run", name="run_hardware"),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=RANKABLE & ~NOT_REPRODUCED,
                fields=["group", "latency_ns", "run_id"],
                name="run_group_ranked",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=RANKABLE & NOT_REPRODUCED, fields=["group", "latency_ns", "run_id"], name="run_group_demoted"
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=LISTED & Q(latency_ns__isnull=False) & ~Q(status__in=RANKABLE_STATUSES),
                fields=["group", "latency_ns", "run_id"],
                name="run_group_unranked",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=LISTED & Q(latency_ns=None), fields=["group", "run_id"], name="run_group_unmeasured"
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                models.F("group"),
                models.F("source_rank"),
                models.F("run_id"),
                condition=Q(source_rank__isnull=False),
                name="run_group_source_rank",
            ),
        ),
        migrations.AddIndex(model_name="run", index=models.Index(DATED, models.F("run_id"), name="run_newest")),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(models.F("definition"), DATED, models.F("run_id"), name="run_definition"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(models.F("source"), DATED, models.F("run_id"), name="run_source_newest"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(models.F("hardware"), DATED, models.F("run_id"), name="run_hardware"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                models.F("evidence"),
                DATED,
                models.F("run_id"),
                condition=~Q(evidence="reported"),
                name="run_evidence",
            ),
        ),
        migrations.AddIndex(
            model_name="run", index=models.Index(Upper("implementation_name"), name="run_implementation_upper")
        ),
        TrigramExtension(),
        AddIndexOnPostgreSQL(
            model_name="run",
            index=GistIndex(
                OpClass(Upper("implementation_name"), name="gist_trgm_ops"), name="run_implementation_trgm"
            ),
        ),
        AddIndexOnPostgreSQL(
            model_name="run",
            index=GistIndex(OpClass(Upper("project"), name="gist_trgm_ops"), name="run_project_trgm"),
        ),
        migrations.RunPython(fill_figures, migrations.RunPython.noop),
    ]
