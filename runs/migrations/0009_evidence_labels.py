from __future__ import annotations

from django.db import migrations, models

EVIDENCE_CHOICES = [("reported", "Reported"), ("reproduced", "Reproduced"), ("not_reproduced", "Not reproduced")]


class Migration(migrations.Migration):
    """The evidence levels' labels, spelled one way ("Not reproduced", not "not reproduced")."""

    dependencies = [("runs", "0008_run_status_changes")]

    operations = [
        migrations.AlterField(
            model_name="run",
            name="evidence",
            field=models.CharField(choices=EVIDENCE_CHOICES, default="reported", max_length=16),
        ),
        migrations.AlterField(
            model_name="evidencechange",
            name="previous",
            field=models.CharField(choices=EVIDENCE_CHOICES, max_length=16),
        ),
        migrations.AlterField(
            model_name="evidencechange",
            name="evidence",
            field=models.CharField(choices=EVIDENCE_CHOICES, max_length=16),
        ),
    ]
