from __future__ import annotations

from django.db import migrations


class Migration(migrations.Migration):
    """Per-group figures and search indexes (filled in by the search-at-scale work)."""

    dependencies = [("runs", "0006_rule_version_and_workers")]

    operations: list[migrations.operations.base.Operation] = []
