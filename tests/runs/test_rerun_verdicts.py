"""What the worker does with a harness result: the verdict and its rule, retries, and the evidence it moves."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from harness.parent.worker import harness_command, read_job
from records.rerun import RULE_VERSION
from records.sources import rerun_protocol_of
from runs.models import Run
from runs.selectors import document_value
from tests.pages import visible_text
from tests.results import drifted, harness_result
from tests.runs import attested
from verification.models import EvidenceChange, RerunRequest
from verification.reruns import request_rerun, rerun_job, sweep_reruns
from verification.worker_keys import site_public_key

pytestmark = pytest.mark.usefixtures("memory_broker")


def finish(request: RerunRequest, result: dict[str, Any]) -> RerunRequest:
    """One attempt of the request, as a worker makes it, with this harness result."""
    return attested.finish(request, result)


def test_a_verdict_stores_its_rule_and_tolerance_and_the_page_shows_them(
    client: Client, moderator: User, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-vectorised")
    # Twice as fast as reported: the claim is reproduced (rule 1 called this "not reproduced").
    rerun = finish(request_rerun(run, user=moderator), harness_result(median=run.latency_ns / 2))
    assert (rerun.verdict, rerun.rule_version, rerun.tolerance) == ("reproduced", RULE_VERSION, 0.10)
    change = EvidenceChange.objects.get(run=run)
    assert (change.evidence, change.rule_version, change.tolerance) == ("reproduced", RULE_VERSION, 0.10)
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert f"(rule {RULE_VERSION}, tolerance ±10%)" in page
    assert "on the run's own hardware class also its latency (the figure it is ranked by)" in page
    twin = client.get(f"/runs/{run.run_id}.json").json()
    assert (twin["reruns"][0]["ruleVersion"], twin["reruns"][0]["tolerance"]) == (RULE_VERSION, 0.10)
    assert twin["evidence"]["history"][0]["ruleVersion"] == RULE_VERSION


def test_a_noisy_attempt_runs_again_later_and_the_last_one_stands(
    settings: Any, client: Client, moderator: User, demo: Callable[[str], Run]
) -> None:
    settings.RERUN_MAX_ATTEMPTS = 2
    run = demo("rmsnorm-vectorised")
    noisy = harness_result(median=run.latency_ns * 1.15, interval=(run.latency_ns * 0.7, run.latency_ns * 1.6))
    rerun = finish(request_rerun(run, user=moderator), noisy)
    assert (rerun.state, rerun.result_run, rerun.attempts) == ("queued", None, 1)
    assert rerun.retry_at is not None and rerun.retry_at > timezone.now()
    assert "attempt 1 was inconclusive" in rerun.verdict_reason
    assert "the time budget ran out before it decided" in rerun.verdict_reason
    assert "runs again after" in visible_text(client.get(run.get_absolute_url()).content)
    assert sweep_reruns().resent == 0  # not before its time
    RerunRequest.objects.filter(pk=rerun.pk).update(retry_at=timezone.now() - timedelta(seconds=1))
    assert sweep_reruns().resent == 1
    rerun = finish(rerun, noisy)
    assert (rerun.state, rerun.verdict, rerun.attempts, rerun.rule_version) == ("succeeded", "", 2, RULE_VERSION)
    assert rerun.result_run is not None
    run.refresh_from_db()
    assert run.evidence == "reported"  # inconclusive moves nothing
    assert not EvidenceChange.objects.filter(run=run).exists()
    # The page says how many attempts it took, and why each was inconclusive.
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert "Inconclusive after 2 attempts" in page
    assert "attempt 1, inconclusive: every case passed; the median latency is 1.15× the reported figure" in page
    twin = client.get(f"/runs/{run.run_id}.json").json()
    (shown,) = twin["reruns"]
    assert len(shown["attemptReasons"]) == 1
    assert "the time budget ran out before it decided" in shown["attemptReasons"][0]
    assert "the time budget ran out before it decided" in shown["verdictReason"]


def test_a_correctness_failure_is_not_reproduced_at_the_first_attempt(
    settings: Any, moderator: User, demo: Callable[[str], Run]
) -> None:
    run = demo("softmax-exp2")
    wrong = harness_result("INCORRECT_NUMERICAL")
    rerun = finish(request_rerun(run, user=moderator), wrong)
    assert (rerun.state, rerun.verdict, rerun.attempts) == ("failed", "not_reproduced", 1)
    assert "the kernel's outputs were wrong (INCORRECT_NUMERICAL)" in rerun.verdict_reason
    run.refresh_from_db()
    assert run.evidence == "not_reproduced"


def test_a_rerun_on_other_hardware_is_shown_and_moves_nothing(
    client: Client, moderator: User, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-row-loop")
    rerun = finish(request_rerun(run, user=moderator, hardware="nvidia-h100"), harness_result(median=1e9))
    assert rerun.verdict == ""
    assert "other hardware" in rerun.verdict_reason
    run.refresh_from_db()
    assert run.evidence == "reported"
    assert "shown, moves nothing" in visible_text(client.get(run.get_absolute_url()).content)


def test_reevaluate_applies_todays_rule_and_writes_the_history(moderator: User, demo: Callable[[str], Run]) -> None:
    run = demo("rmsnorm-vectorised")
    # A rerun twice as fast as reported, decided under rule 1 (outside ±10 %: "not reproduced").
    rerun = finish(request_rerun(run, user=moderator), harness_result(median=run.latency_ns / 2))
    RerunRequest.objects.filter(pk=rerun.pk).update(verdict="not_reproduced", rule_version=None, tolerance=None)
    EvidenceChange.objects.filter(run=run).delete()
    Run.objects.filter(pk=run.pk).update(evidence="not_reproduced")
    out = io.StringIO()
    call_command("reevaluate", run.run_id, stdout=out)
    assert f"run {run.run_id}: not_reproduced → reproduced (rerun #{rerun.pk})" in out.getvalue()
    assert f"rule {RULE_VERSION}: 1 verdict(s) changed, 1 evidence level(s) moved" in out.getvalue()
    rerun.refresh_from_db()
    run.refresh_from_db()
    assert (rerun.verdict, rerun.rule_version, run.evidence) == ("reproduced", RULE_VERSION, "reproduced")
    (change,) = EvidenceChange.objects.filter(run=run)
    assert (change.previous, change.evidence, change.rule_version) == ("not_reproduced", "reproduced", RULE_VERSION)
    # Applying the same rule again changes nothing.
    call_command("reevaluate", stdout=out)
    assert out.getvalue().rstrip().endswith("0 verdict(s) changed, 0 evidence level(s) moved")
    assert EvidenceChange.objects.filter(run=run).count() == 1


def test_the_rerun_follows_the_protocol_of_the_runs_source(
    tmp_path: Path, moderator: User, demo: Callable[[str], Run]
) -> None:
    assert [rerun_protocol_of(source) for source in ("sol-execbench", "flashinfer-bench", "kernelindex", "x")] == [
        "sol-execbench",
        "flashinfer-bench",
        "kernelindex",
        "kernelindex",
    ]
    run = demo("rmsnorm-vectorised")
    job = read_job(rerun_job(request_rerun(run, user=moderator)), site_public_key())
    command = harness_command(job, tmp_path, unsandboxed=False)
    assert command[command.index("--protocol") + 1] == "kernelindex"
    assert command[command.index("--device") + 1] == "cpu"
    # Pairs until the speedup's interval is within half the tolerance, or the case's budget ends.
    assert command[command.index("--precision") + 1] == "0.05"
    assert command[command.index("--case-budget") + 1] == "10"
    assert "--fresh-inputs" not in command


def test_a_run_reproduced_with_its_latency_only_within_the_hosts_drift_is_ranked_by_the_reruns(
    client: Client, moderator: User, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-vectorised")
    reported = run.latency_ns
    spec = document_value(run.digest)["spec"]
    rerun = finish(request_rerun(run, user=moderator), drifted(spec, reported, 1.6))
    assert rerun.verdict == "reproduced"
    assert "within the host's drift only" in rerun.verdict_reason
    run.refresh_from_db()
    assert (run.latency_ns, run.reported_latency_ns) == (pytest.approx(reported * 1.6), reported)
    rows = {row["runId"]: row for row in client.get(run.group.get_absolute_url() + ".json").json()["runs"]}
    assert rows[run.run_id]["latencyNs"] == pytest.approx(reported * 1.6)
    assert rows[run.run_id]["reportedLatencyNs"] == reported
    assert run.group.runs.get(pk=run.pk) in Run.objects.ranked()
    page = visible_text(client.get(run.get_absolute_url()).content)
    assert "so it is ranked by the reruns' figure" in page
