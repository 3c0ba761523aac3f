from __future__ import annotations

from django.contrib.postgres.indexes import GistIndex, OpClass
from django.db import migrations
from django.db.models import F, Q
from django.db.models.functions import Upper

from runs.migration_operations import AddIndexOnPostgreSQL, RemoveIndexOnPostgreSQL

# models.DISTINCT_PROJECT as it stands at this migration.
DISTINCT_PROJECT = ~Q(project="") & ~Q(project=F("implementation_name"))


class Migration(migrations.Migration):
    """The project's trigram index holds only the runs whose project says more than their implementation's name
    (the name's own index finds the others): at 10^6 SOL-ExecBench runs, whose project is their submission's name,
    scanning it took 11 ms of every search for a fragment."""

    dependencies = [
        ("runs", "0013_group_rank_marks"),
    ]

    operations = [
        RemoveIndexOnPostgreSQL(model_name="run", name="run_project_trgm"),
        AddIndexOnPostgreSQL(
            model_name="run",
            index=GistIndex(
                OpClass(Upper("project"), name="gist_trgm_ops"), name="run_project_trgm", condition=DISTINCT_PROJECT
            ),
        ),
    ]
