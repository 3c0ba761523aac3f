from __future__ import annotations

import json

from django.contrib.postgres.indexes import GistIndex, OpClass
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Upper

from runs.migration_operations import AddFieldInPlace, AddIndexOnPostgreSQL

LISTED = Q(withdrawn_at=None)
NOT_REPRODUCED = Q(evidence="not_reproduced")
ON_BOARD = LISTED & Q(source_rank__isnull=False) & ~NOT_REPRODUCED
BOARD_DEMOTED = LISTED & Q(source_rank__isnull=False) & NOT_REPRODUCED
AUTHORED = ~Q(author="")


def fill_authors_and_reports(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """The authors of the runs already stored, from their Implementation documents (spec.author), as the
    importer fills them from now on; and each run's count of issue reports, as attestations keeps it."""
    Run = apps.get_model("runs", "Run")
    Document = apps.get_model("runs", "Document")
    implementations = Document.objects.filter(kind="Implementation", canonical__contains='"author":')
    for digest, canonical in implementations.values_list("digest", "canonical").iterator(chunk_size=1000):
        author = (json.loads(canonical).get("spec") or {}).get("author")
        if isinstance(author, str) and author:
            Run.objects.filter(implementation_digest=digest).update(author=author[:255])
    reports = apps.get_model("attestations", "IssueReport").objects.all()
    per_run = reports.filter(run_id=OuterRef("pk")).order_by().values("run_id").annotate(n=Count("pk")).values("n")
    Run.objects.filter(pk__in=reports.values("run_id")).update(issue_report_count=Subquery(per_run))


def analyze_runs(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """PostgreSQL's statistics of the new column: without them it cannot tell that most runs name no author,
    and read a search's author part by walking every run newest first (0.5 s at 10^6 runs, against 0.03 ms
    through run_author_upper)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ANALYZE runs_run")


class Migration(migrations.Migration):
    """A run's author (searchable), its count of issue reports (the run page asks only where there are some),
    and a source-ordered leaderboard's runs a rerun did not reproduce read after the others."""

    dependencies = [
        ("runs", "0009_evidence_labels"),
        ("attestations", "0001_initial"),
    ]

    operations = [
        AddFieldInPlace(model_name="run", name="author", field=models.CharField(blank=True, max_length=255)),
        AddFieldInPlace(model_name="run", name="issue_report_count", field=models.PositiveIntegerField(default=0)),
        migrations.RemoveIndex(model_name="run", name="run_group_source_rank"),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                models.F("group"),
                models.F("source_rank"),
                models.F("run_id"),
                condition=ON_BOARD,
                name="run_group_source_rank",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                models.F("group"),
                models.F("source_rank"),
                models.F("run_id"),
                condition=BOARD_DEMOTED,
                name="run_group_source_demoted",
            ),
        ),
        migrations.AddIndex(
            model_name="run", index=models.Index(Upper("author"), condition=AUTHORED, name="run_author_upper")
        ),
        AddIndexOnPostgreSQL(
            model_name="run",
            index=GistIndex(OpClass(Upper("author"), name="gist_trgm_ops"), condition=AUTHORED, name="run_author_trgm"),
        ),
        migrations.RunPython(fill_authors_and_reports, migrations.RunPython.noop),
        migrations.RunPython(analyze_runs, migrations.RunPython.noop, elidable=True),
    ]
