from __future__ import annotations

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db.models import Q

from runs.figures import RANK_MARKS_FROM, rank_marks

# models.RANKED as it stands at this migration.
RANKED = Q(withdrawn_at=None, status__in=["passed", "measured"], latency_ns__isnull=False) & ~Q(
    evidence="not_reproduced"
)


def fill_rank_marks(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """The marks of the large groups already stored, as refresh_group_figures keeps them from now on."""
    ComparisonGroup = apps.get_model("runs", "ComparisonGroup")
    Run = apps.get_model("runs", "Run")
    for group in ComparisonGroup.objects.filter(ranked_count__gte=RANK_MARKS_FROM):
        group.rank_marks = rank_marks(Run.objects.filter(RANKED, group_id=group.pk), group.ranked_count)
        group.save(update_fields=["rank_marks"])


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0012_rerun_verdict_choices"),
    ]

    operations = [
        migrations.AddField(
            model_name="comparisongroup",
            name="rank_marks",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(fill_rank_marks, migrations.RunPython.noop),
    ]
