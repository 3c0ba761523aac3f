"""Who the admin's log names for a rerun: the moderator for what they did, the system account for the outcomes.

A rerun's result, failure, retry and re-evaluation are the worker's acts (or the
sweep's, or a command's), not the requester's: docs/reruns.md names the inactive
account `kernelindex` for them, and a moderator's history lists only what they did.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User

from runs.models import Run
from tests.results import harness_result
from tests.runs import attested
from verification.reruns import reevaluate_run, request_rerun

pytestmark = pytest.mark.usefixtures("memory_broker")
SYSTEM_ACCOUNT = "kernelindex"


def log_of(run: Run) -> list[tuple[str, str]]:
    """(who, what) for each line of the run's history, oldest first."""
    entries = LogEntry.objects.filter(object_id=str(run.pk)).select_related("user").order_by("action_time", "id")
    return [(entry.user.username, entry.get_change_message()) for entry in entries]


def test_a_result_is_logged_under_the_system_account(moderator: User, demo: Callable[[str], Run]) -> None:
    run = demo("rmsnorm-vectorised")
    request = attested.finish(
        request_rerun(run, user=moderator, reason="check"), harness_result(median=run.latency_ns / 2)
    )
    reevaluate_run(run)
    who = log_of(run)
    assert who[0] == (moderator.username, f"Requested rerun #{request.pk} on cpu: check")
    assert [name for name, _ in who[1:]] == [SYSTEM_ACCOUNT] * (len(who) - 1)
    # The verdict in the evidence levels' spelling (Run.Evidence), in lower case within the line.
    assert (SYSTEM_ACCOUNT, f"Rerun #{request.pk} succeeded: every case passed; reproduced") in who[1:]
    assert not User.objects.get(username=SYSTEM_ACCOUNT).is_active


def test_a_failure_is_logged_under_the_system_account(moderator: User, demo: Callable[[str], Run]) -> None:
    run = demo("rmsnorm-vectorised")
    # A worker whose harness wrote no result attests that (its result is None).
    request = attested.finish(request_rerun(run, user=moderator), None)
    failed = f"Rerun #{request.pk} failed: HARNESS_ERROR: the harness produced no result"
    assert log_of(run)[-1] == (SYSTEM_ACCOUNT, failed)
