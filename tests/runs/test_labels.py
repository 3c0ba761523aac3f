"""Each run status and evidence level has one spelling, runs.models': the pages and the rerun verdicts use it."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.test import Client

from runs.figures import refresh_group_figures
from runs.models import EVIDENCE_LABELS, Run
from verification.models import RerunRequest

STATUS = re.compile(r'<span class="status status-(\w+)">([^<]*)</span>')


def test_every_page_spells_each_status_as_run_status_labels_it(client: Client, demo: Callable[[str], Run]) -> None:
    """Run tables, leaderboards and per-case tables name a status by Run.Status's label, never by a spelling
    of their own."""
    assert [status.label for status in Run.Status] == ["Passed", "Failed", "Error", "Timeout", "Measured"]
    viewed = demo("gemm-bf16")  # a failed run: its case table shows failed cases
    runs = list(Run.objects.exclude(pk=viewed.pk).order_by("run_id")[: len(Run.Status)])
    for run, status in zip(runs, Run.Status, strict=True):
        Run.objects.filter(pk=run.pk).update(status=status)
    refresh_group_figures({run.group_id for run in runs})
    shown: set[tuple[str, str]] = set()
    for url in ["/", *{run.group.get_absolute_url() for run in runs}, viewed.get_absolute_url()]:
        shown |= set(STATUS.findall(client.get(url).content.decode()))
    statuses = {(key, label) for key, label in shown if key in Run.Status.values}
    assert {key for key, _ in statuses} == set(Run.Status.values), shown
    assert all(label == Run.Status(key).label for key, label in statuses), shown
    # The same spans carry evidence levels (the run page's): those are spelled as Run.Evidence spells them.
    assert all(label == EVIDENCE_LABELS[key] for key, label in shown if key in EVIDENCE_LABELS), shown


def test_a_rerun_verdict_is_one_of_the_evidence_levels_a_rerun_decides() -> None:
    choices = dict(RerunRequest._meta.get_field("verdict").choices or [])
    assert choices == {
        Run.Evidence.REPRODUCED: Run.Evidence.REPRODUCED.label,
        Run.Evidence.NOT_REPRODUCED: Run.Evidence.NOT_REPRODUCED.label,
    }
    assert RerunRequest(verdict=Run.Evidence.NOT_REPRODUCED).verdict_label == "Not reproduced"
    assert RerunRequest(verdict="").verdict_label == ""
