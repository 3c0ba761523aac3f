"""A database from before the move (runs migration 0020, the rerun rows in runs' tables) comes through it with
every row, and with the content types, so that a moderator's rerun permission and the admin's log follow."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from runs.models import Run
from verification.models import RerunRequest

BEFORE = [("runs", "0020_verification_pause"), ("verification", None)]


def migrate(targets: list[tuple[str, str | None]]) -> Any:
    """Migrate the test database to these targets; the historical models (apps) at the state reached."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(sorted(executor.loader.applied_migrations), at_end=True).apps


def leaves() -> list[tuple[str, str | None]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_the_move_keeps_its_reruns_and_permissions(run: Run) -> None:
    try:
        old = migrate(BEFORE)
        # Written as the code before the move wrote them: runs' models, runs' content type and permission.
        rerun = old.get_model("runs", "RerunRequest").objects.create(
            run_id=run.pk, run_digest=run.digest, hardware="cpu", reason="asked before the move", state="succeeded"
        )
        content_type = old.get_model("contenttypes", "ContentType").objects.get(app_label="runs", model="rerunrequest")
        permission = old.get_model("auth", "Permission").objects.get(codename="request_rerun")
        assert permission.content_type_id == content_type.pk
        moderator = old.get_model("auth", "User").objects.create(username="moderator")
        moderator.user_permissions.add(permission)
        entry = {"content_type_id": content_type.pk, "object_id": str(rerun.pk), "object_repr": "r", "action_flag": 2}
        old.get_model("admin", "LogEntry").objects.create(user_id=moderator.pk, **entry)
    finally:
        migrate(leaves())

    moved = RerunRequest.objects.get(pk=rerun.pk)
    assert (moved.run, moved.reason) == (run, "asked before the move")
    assert User.objects.get(username="moderator").has_perm("verification.request_rerun")
    assert LogEntry.objects.get(object_id=str(rerun.pk)).get_edited_object() == moved
