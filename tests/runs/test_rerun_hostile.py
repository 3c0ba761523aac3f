"""Hostile solutions through real reruns: the two attacks that once made a rerun say "Reproduced".

A real Celery worker process on a real Redis reruns each in the harness's sandbox (see
test_rerun_worker.py); the kernels are the ones tests/harness/test_hostile.py evaluates directly,
each reported at the very figure it would fake. The run must end "not reproduced", and its page
must say why: the harness status of a kernel fault, with a reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from records.rerun import KERNEL_FAULTS
from runs.models import Run
from tests.pages import squeezed, visible_text
from tests.runs.conftest import Worker, wait_for
from verification.models import RerunRequest

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = Path(__file__).resolve().parent.parent / "harness" / "hostile"


def figure_in(file: str, constant: str) -> float:
    """The figure a hostile kernel fakes, as it states it (so the run reports exactly that)."""
    found = re.search(rf"^{constant} = ([\d_]+)$", (HOSTILE / file).read_text(), re.MULTILINE)
    assert found, f"{file} states no {constant}"
    return float(found.group(1).replace("_", ""))


ATTACKS = {
    # At import, the kernel writes PASSED results with samples at the reported figure to every descriptor.
    "forged-lines": ("forged_lines.py", figure_in("forged_lines.py", "FORGED_NS")),
    # The slow row loop once per shape, then a busy-wait to the reported figure on every call.
    "spin-to-figure": ("spin_to_figure.py", figure_in("spin_to_figure.py", "SPIN_TARGET_NS")),
}


def queue_from_the_page(client: Client, run: Run) -> RerunRequest:
    response = client.post(f"/runs/{run.run_id}/rerun", {"reason": "tests"})
    assert response.status_code == 302
    return RerunRequest.objects.filter(run=run).latest("requested_at")


def test_forged_results_and_a_spun_figure_are_not_reproduced_and_the_page_says_why(
    client: Client, moderator: User, solution_run: Callable[..., Run], worker: Worker
) -> None:
    client.force_login(moderator)
    for name, (file, figure) in ATTACKS.items():
        run = solution_run(name, (HOSTILE / file).read_text(), reported_ns=figure)
        rerun = queue_from_the_page(client, run)
        wait_for(rerun)
        rerun.refresh_from_db()
        run.refresh_from_db()
        seen = f"{name}: {rerun.state} {rerun.verdict} {rerun.verdict_reason} {rerun.failure_status}"
        assert run.evidence == "not_reproduced", seen + worker.log()[-2000:]
        assert rerun.verdict_reason or rerun.failure_reason, seen
        page = visible_text(client.get(run.get_absolute_url()).content)
        assert squeezed("Evidence: Not reproduced").lower() in squeezed(page).lower(), seen
        assert any(status in page for status in KERNEL_FAULTS), f"{seen}: no kernel fault named on the page"
