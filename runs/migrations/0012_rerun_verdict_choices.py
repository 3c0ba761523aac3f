from __future__ import annotations

from django.db import migrations, models

VERDICTS = [("reproduced", "Reproduced"), ("not_reproduced", "Not reproduced")]


class Migration(migrations.Migration):
    """A rerun's verdict is one of the evidence levels a rerun decides, spelled as Run.Evidence spells them,
    or empty (undecided, or inconclusive). No data changes: the column only ever held those values."""

    dependencies = [("runs", "0011_author_and_page_counters")]

    operations = [
        migrations.AlterField(
            model_name="rerunrequest",
            name="verdict",
            field=models.CharField(blank=True, choices=VERDICTS, max_length=16),
        ),
    ]
