"""The figures kept on groups and runs (runs.figures) stay right through every writer that moves them."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from attestations.models import Attestation, IssueReport
from attestations.services import moderate_attestations, set_report_status
from runs import figures
from runs.models import ComparisonGroup, Run
from runs.services import restore_run, withdraw_run
from tests.results import harness_result
from tests.runs import attested
from verification.models import RerunRequest
from verification.reruns import request_rerun

pytestmark = pytest.mark.usefixtures("memory_broker")

Figures = tuple[int, int, float | None, str | None, list[list[float]]]
MARK_EVERY = 2


@pytest.fixture(autouse=True)
def rank_marks_in_small_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo's groups hold a few runs each: kept marks there, one every other ranked run."""
    monkeypatch.setattr(figures, "RANK_MARKS_FROM", 1)
    monkeypatch.setattr(figures, "RANK_MARK_EVERY", MARK_EVERY)


def counted(group: ComparisonGroup) -> Figures:
    """The figures as a reader would count them by hand: listed runs, ranked runs, the fastest ranked one, and
    every other ranked run's latency with how many ranked runs are faster."""
    runs = list(Run.objects.filter(group=group))
    listed = [run for run in runs if run.withdrawn_at is None]
    ranked = sorted(
        (run for run in listed if run.is_rankable and run.evidence != "not_reproduced"),
        key=lambda run: (run.latency_ns, run.run_id),
    )
    best = ranked[0] if ranked else None
    latencies = [run.latency_ns for run in ranked]
    marks = [[ns, sum(other < ns for other in latencies)] for ns in latencies[::MARK_EVERY]]
    return len(listed), len(ranked), best.latency_ns if best else None, best.run_id if best else None, marks


def kept(group: ComparisonGroup) -> Figures:
    group = ComparisonGroup.objects.select_related("best_run").get(pk=group.pk)
    best = group.best_run.run_id if group.best_run else None
    assert group.best_run_run_id == (best or ""), "the run id a run page links to as #1 is the best run's"
    return group.run_count, group.ranked_count, group.best_latency_ns, best, group.rank_marks


def assert_every_group_right() -> None:
    for group in ComparisonGroup.objects.all():
        assert kept(group) == counted(group), group


def verdict(run: Run, moderator: User, result: dict[str, Any]) -> RerunRequest:
    return attested.finish(request_rerun(run, user=moderator), result)


def test_group_figures_follow_import_withdraw_restore_verdict_and_reevaluate(
    client: Client, moderator: User, demo: Callable[[str], Run]
) -> None:
    assert_every_group_right()
    fastest = Run.objects.get(pk=ComparisonGroup.objects.exclude(best_run=None).first().best_run_id)  # type: ignore[union-attr]
    group = fastest.group

    withdraw_run(fastest, "copied from another submission")
    assert_every_group_right()
    assert kept(group)[3] != fastest.run_id
    restore_run(fastest)
    assert_every_group_right()
    assert kept(group)[3] == fastest.run_id

    # A rerun that confirms a correctness failure: not reproduced, so no longer the group's best.
    wrong = harness_result("INCORRECT_NUMERICAL")
    rerun = verdict(fastest, moderator, wrong)
    assert rerun.verdict == "not_reproduced"
    assert_every_group_right()
    assert kept(group)[3] != fastest.run_id
    definition = client.get(f"{fastest.definition.get_absolute_url()}.json").json()  # type: ignore[union-attr]
    shown = next(g for g in definition["groups"] if g["key"] == group.key)
    assert (shown["runs"], shown["bestLatencyNs"]) == (kept(group)[0], kept(group)[2])

    # Reevaluated under a rule that reads the stored result differently: the level, and the figures, follow.
    RerunRequest.objects.filter(pk=rerun.pk).update(verdict="reproduced", rule_version=None)
    Run.objects.filter(pk=fastest.pk).update(evidence="reproduced")
    ComparisonGroup.objects.filter(pk=group.pk).update(
        ranked_count=0, best_run=None, best_run_run_id="", best_latency_ns=None
    )
    call_command("reevaluate", fastest.run_id, stdout=io.StringIO())
    assert Run.objects.get(pk=fastest.pk).evidence == "not_reproduced"
    assert_every_group_right()


def test_run_counters_follow_reruns_evidence_and_notes(moderator: User, demo: Callable[[str], Run]) -> None:
    run = demo("softmax-exp2")
    assert (run.rerun_count, run.evidence_change_count, run.note_count) == (0, 0, 0)
    verdict(run, moderator, harness_result("INCORRECT_NUMERICAL"))
    run.refresh_from_db()
    # The rerun's request, and the change of level it made.
    assert (run.rerun_count, run.evidence_change_count) == (1, 1)

    notes = [Attestation.objects.create(run=run, kind="note", body=f"note {i}", status="pending") for i in range(3)]
    run.refresh_from_db()
    assert run.note_count == 0  # waiting for a moderator: not shown, not counted
    moderate_attestations(Attestation.objects.filter(pk__in=[n.pk for n in notes[:2]]), "approved", moderator)
    run.refresh_from_db()
    assert run.note_count == 2
    notes[0].delete()
    run.refresh_from_db()
    assert run.note_count == 1

    # Issue reports: each one counts (the public sees every report's kind, date and status), whatever its status.
    reports = [IssueReport.objects.create(run=run, category="other", body=f"report {i}") for i in range(2)]
    set_report_status(IssueReport.objects.filter(pk=reports[0].pk), "dismissed", moderator)
    run.refresh_from_db()
    assert run.issue_report_count == 2
    reports[1].delete()
    run.refresh_from_db()
    assert run.issue_report_count == 1
