from __future__ import annotations

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db.models import Count, OuterRef, Subquery

from runs.figures import count_per_run
from runs.migration_operations import AddFieldInPlace


def fill(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """The runs already stored with more than one version get their count (the others have one, the field's
    default), and each group its best run's run id, as their writers keep them from now on."""
    Run = apps.get_model("runs", "Run")
    RunVersion = apps.get_model("runs", "RunVersion")
    ComparisonGroup = apps.get_model("runs", "ComparisonGroup")
    changed = RunVersion.objects.order_by().values("run_id").annotate(n=Count("pk")).filter(n__gt=1)
    Run.objects.filter(pk__in=changed.values("run_id")).update(
        version_count=count_per_run(RunVersion.objects.all())
    )
    best = Run.objects.filter(pk=OuterRef("best_run_id")).values("run_id")[:1]
    ComparisonGroup.objects.exclude(best_run=None).update(best_run_run_id=Subquery(best))


class Migration(migrations.Migration):
    """A run page lists a run's versions only where it has two or more, and links to its group's #1, without
    a query for either."""

    dependencies = [
        ("runs", "0014_project_trigram_index_distinct_projects"),
    ]

    operations = [
        AddFieldInPlace(model_name="run", name="version_count", field=models.PositiveIntegerField(default=1)),
        AddFieldInPlace(
            model_name="comparisongroup",
            name="best_run_run_id",
            field=models.CharField(blank=True, max_length=16),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
