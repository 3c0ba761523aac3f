"""The evidence rule and the rerun's manifest, on plain values."""

from __future__ import annotations

from typing import Any

import pytest

from records.manifest import manifest_item
from records.rerun import (
    CPU_TIME_CLOCK,
    HOST_DRIFT,
    INCONCLUSIVE,
    LATENCY_CLOCK,
    NOT_REPRODUCED,
    REPRODUCED,
    RULE_VERSION,
    UNCHECKED_CLOCK,
    Claim,
    RerunOf,
    Verdict,
    measured_from_result,
    measured_from_run,
    ranked_latency,
    reported_claim,
    rerun_manifest,
    verdict,
)
from records.schema import make_document
from records.summary import summarize
from tests.results import harness_result as result
from tests.results import speedup_result


def decide(claim: Claim, outcome: dict[str, Any], **options: Any) -> Verdict:
    return verdict(claim, measured_from_result(outcome), 0.10, **options)


def test_a_rerun_within_the_tolerance_reproduces_and_records_the_rule() -> None:
    decided = decide(Claim(920.0), result(median=1000))
    assert decided.level == REPRODUCED
    assert (decided.rule_version, decided.tolerance) == (RULE_VERSION, 0.10)


def test_a_kernel_faster_than_reported_reproduces_its_claim() -> None:
    # Twice as fast as claimed: version 1 of the rule called this "not reproduced" (outside ±10 %).
    assert decide(Claim(2000.0), result(median=1000)).level == REPRODUCED
    assert decide(Claim(None, 1.0, "mean"), speedup_result([(2.0, 1.9, 2.1)])).level == REPRODUCED


def test_a_reported_figure_the_rerun_cannot_approach_is_not_reproduced() -> None:
    decided = decide(Claim(50.0), result(median=1000))
    assert decided.level == NOT_REPRODUCED
    assert "20.00× the reported figure" in decided.reason


def test_on_other_hardware_the_speedups_are_compared_not_the_latencies() -> None:
    # SOL-ExecBench's avg_speedup, against a rerun on a host three times slower in absolute terms.
    claim = reported_claim({"sourceNative": {"metrics": {"avg_speedup": 1.5}}}, latency_ns=300.0)
    assert claim == Claim(300.0, 1.5, "mean")
    decided = decide(claim, speedup_result([(1.6, 1.55, 1.65), (1.45, 1.4, 1.5)]), own_hardware=False)
    assert decided.level == REPRODUCED
    assert decided.reason.endswith("the verdict covers the mean speedup over the reference")
    slower = decide(claim, speedup_result([(0.6, 0.58, 0.62), (0.7, 0.68, 0.72)]), own_hardware=False)
    assert slower.level == NOT_REPRODUCED
    assert "0.65× the reference against 1.50× reported" in slower.reason


def test_on_its_own_hardware_a_latency_the_rerun_refutes_convicts_beside_an_honest_speedup() -> None:
    # The run reports its honest speedup, and every latency (its own, each case's, each case's reference's)
    # divided by 10: version 7 checked the speedup alone and reproduced it, ranked by the latency.
    spec = {
        "cases": [
            {"workload": "c0", "status": "passed", "latencyNs": 100.0, "referenceLatencyNs": 160.0, "speedup": 1.6},
            {"workload": "c1", "status": "passed", "latencyNs": 100.0, "referenceLatencyNs": 145.0, "speedup": 1.45},
        ]
    }
    claim = reported_claim(spec, latency_ns=100.0)
    decided = decide(claim, speedup_result([(1.6, 1.55, 1.65), (1.45, 1.4, 1.5)]))
    assert decided.level == NOT_REPRODUCED
    assert "latency is 10.00× the reported figure" in decided.reason
    assert "3 of the 6 figures checked refuted" in decided.reason
    # The same figures, honest: every one of them checked and reproduced.
    honest = decide(reported_claim(spec, latency_ns=1000.0), speedup_result([(1.6, 1.55, 1.65), (1.45, 1.4, 1.5)]))
    assert honest.level == NOT_REPRODUCED  # the cases' latencies still claim 100 ns
    cases = [
        {**case, "latencyNs": 1000.0, "referenceLatencyNs": case["referenceLatencyNs"] * 10} for case in spec["cases"]
    ]
    reproduced = decide(reported_claim({"cases": cases}, 1000.0), speedup_result([(1.6, 1.55, 1.65), (1.45, 1.4, 1.5)]))
    assert reproduced.level == REPRODUCED
    assert reproduced.reason.endswith(
        "the verdict covers the geomean speedup over the reference, the median latency and 2 cases' latency and speedup"
    )


def honest_speedups_beside(latency_ns: float, case_speedup: float = 1.6) -> tuple[Claim, dict[str, Any]]:
    """A run claiming 1000 ns and speedups of 1.6 and 1.45 per case, and a quiet rerun that measures those
    speedups within a narrow interval but its latencies at `latency_ns` (and case 1's speedup at `case_speedup`)."""
    spec = {
        "cases": [
            {"workload": "c0", "status": "passed", "latencyNs": 1000.0, "referenceLatencyNs": 1600.0, "speedup": 1.6},
            {"workload": "c1", "status": "passed", "latencyNs": 1000.0, "referenceLatencyNs": 1450.0, "speedup": 1.45},
        ]
    }
    low = case_speedup * 0.97
    measured = speedup_result([(case_speedup, low, case_speedup * 1.03), (1.45, 1.41, 1.49)], host_busy=0.02)
    spread = (latency_ns * 0.97, latency_ns * 1.03)
    measured["latency"] = {**measured["latency"], "median_ns": latency_ns, "ci95_ns": list(spread)}
    for case in measured["cases"]:
        case["latency"] = measured["latency"]
    return reported_claim(spec, latency_ns=1000.0), measured


def test_a_latency_the_hosts_drift_explains_is_left_to_it_beside_a_reproduced_speedup() -> None:
    # Rule 9: a latency has no reference beside it to cancel the host's speed, which on a shared host drifts
    # between moments by up to HOST_DRIFT; 1.5x slower than a claim measured at a fast moment is that drift.
    claim, measured = honest_speedups_beside(latency_ns=1500.0)
    decided = decide(claim, measured)
    assert decided.level == REPRODUCED
    assert "3 within the host's drift only" in decided.reason
    assert "the median latency is 1.50× the reported figure: beyond ±10%" in decided.reason
    # Beyond the drift, on the median, it is refuted, however well the speedups hold.
    beyond = 1000.0 * HOST_DRIFT * 1.1 * 1.05
    claim, measured = honest_speedups_beside(latency_ns=beyond)
    refuted = decide(claim, measured)
    assert refuted.level == NOT_REPRODUCED
    assert "the median latency is 2.31× the reported figure" in refuted.reason


def test_a_cases_speedup_is_left_to_the_drift_but_the_suites_is_not() -> None:
    claim, measured = honest_speedups_beside(latency_ns=1000.0, case_speedup=1.6 / 1.4)
    # Case 1's speedup 1.4 times below its claim, the suite's geometric mean 1.18 times: the suite's speedup,
    # which the pairs and the mean over cases protect from the drift, is held to the quiet spread.
    decided = decide(claim, measured)
    assert decided.level == INCONCLUSIVE
    assert decided.reason.startswith("every case passed; the geomean speedup over the reference is 1.29×")
    # With the suite's speedup as claimed, a case 1.4 times below its own claim is the drift's.
    suite_as_claimed = Claim(claim.latency_ns, (1.6 / 1.4 * 1.45) ** 0.5, "geomean", claim.cases)
    assert decide(suite_as_claimed, measured).level == REPRODUCED
    # And a case 3 times below its claim is refuted.
    claim, measured = honest_speedups_beside(latency_ns=1000.0, case_speedup=1.6 / 3)
    assert decide(Claim(claim.latency_ns, 1.6 / 3 * 1.45, "geomean", claim.cases), measured).level == NOT_REPRODUCED


def test_a_run_reporting_a_latency_alone_is_held_to_the_tolerance() -> None:
    # Nothing paired anchors it: the drift makes a latency-only claim undecided, never reproduced.
    slower = decide(Claim(1000.0), result(median=1500.0, interval=(1480.0, 1520.0)))
    assert (slower.level, slower.retry) == (INCONCLUSIVE, True)
    assert decide(Claim(1000.0), result(median=1050.0, interval=(1040.0, 1060.0))).level == REPRODUCED
    assert decide(Claim(1000.0), result(median=2500.0, interval=(2480.0, 2520.0))).level == NOT_REPRODUCED


def test_a_reproduced_run_is_ranked_by_the_reruns_latency_where_it_reported_one_beyond_the_tolerance() -> None:
    assert ranked_latency(1000.0, 1500.0, REPRODUCED, 0.10) == 1500.0
    # Within the tolerance, faster than reported, or decided otherwise: what it reported.
    assert ranked_latency(1000.0, 1090.0, REPRODUCED, 0.10) == 1000.0
    assert ranked_latency(1000.0, 800.0, REPRODUCED, 0.10) == 1000.0
    assert ranked_latency(1000.0, 1500.0, INCONCLUSIVE, 0.10) == 1000.0
    assert ranked_latency(1000.0, 1500.0, NOT_REPRODUCED, 0.10) == 1000.0
    assert ranked_latency(1000.0, None, REPRODUCED, 0.10) == 1000.0


def test_one_case_claimed_faster_than_it_runs_convicts_however_the_suite_reads() -> None:
    cases = [
        {"workload": "c0", "status": "passed", "latencyNs": 1000.0, "speedup": 1.0},
        {"workload": "c1", "status": "passed", "latencyNs": 1000.0, "speedup": 3.0},
        {"workload": "c2", "status": "passed", "latencyNs": 1000.0, "speedup": 1.0},
    ]
    measured = speedup_result([(1.0, 0.98, 1.02)] * 3)
    decided = decide(Claim(1000.0, 1.0, "geomean", reported_claim({"cases": cases}, 1000.0).cases), measured)
    assert decided.level == NOT_REPRODUCED
    assert "case 2's speedup over the reference is 1.00× the reference against 3.00× reported" in decided.reason
    # Matched by workload, not by position: the rerun lists its cases in another order.
    measured["cases"] = [measured["cases"][2], measured["cases"][0], measured["cases"][1]]
    measured["cases"][2]["speedup"] = {"median": 3.0, "ci95": [2.9, 3.1]}
    assert decide(Claim(1000.0, None, "geomean", reported_claim({"cases": cases}, 1000.0).cases), measured).level == (
        REPRODUCED
    )


def test_slower_than_claimed_within_the_spread_between_evaluations_is_inconclusive() -> None:
    # Slower than claimed beyond the tolerance (1.2x), with a narrow interval, but not beyond what two whole
    # evaluations of one honest kernel can differ by (RUN_TO_RUN): undecided, never wrong.
    decided = decide(Claim(None, 0.42, "geomean"), speedup_result([(0.35, 0.345, 0.355)]))
    assert (decided.level, decided.retry) == (INCONCLUSIVE, True)
    assert "spread between whole evaluations" in decided.reason


def test_an_inflated_claim_is_never_reproduced_and_is_not_reproduced_at_twice_what_it_runs() -> None:
    # Claims above the speedup the pairs measure, with the interval a quiet host gives (±5 %): 1.5x is beyond
    # the tolerance but within what whole evaluations of one honest kernel differ by (RUN_TO_RUN): inconclusive,
    # never reproduced; twice is beyond both, even at the interval's fast end.
    measured = speedup_result([(0.8, 0.76, 0.84)] * 3)
    assert decide(Claim(None, 1.5 * 0.8, "geomean"), measured).level == INCONCLUSIVE
    doubled = decide(Claim(None, 2 * 0.8, "geomean"), measured)
    assert doubled.level == NOT_REPRODUCED
    assert "even at the fast end of its 95 % interval" in doubled.reason


def test_on_a_host_the_judge_measured_quiet_a_claim_inflated_half_again_is_not_reproduced() -> None:
    # The same rerun as above, where the judge saw other work use 3 % of the host's CPU time: evaluations on a
    # quiet host agree within RUN_TO_RUN_QUIET, so 1.5 times what the pairs measure is convicted.
    quiet = speedup_result([(0.8, 0.76, 0.84)] * 3, host_busy=0.03)
    decided = decide(Claim(None, 1.5 * 0.8, "geomean"), quiet)
    assert decided.level == NOT_REPRODUCED
    assert "a quiet host (other work used 3% of its CPU time)" in decided.reason
    # Honest claims a quiet host measures 1.2 times slower (the spread between quiet evaluations, and more)
    # are never convicted; beside other work, or where the judge could not tell, 1.5 times stays undecided.
    assert decide(Claim(None, 1.2 * 0.8, "geomean"), quiet).level == INCONCLUSIVE
    # A latency (harness 0.3.0 on) is the CPU's measure as the CPU time was (results stored before it stay read).
    for clock in (LATENCY_CLOCK, CPU_TIME_CLOCK):
        quiet["limits"] = {"clock_check": clock}
        assert decide(Claim(None, 1.5 * 0.8, "geomean"), quiet).level == NOT_REPRODUCED, clock
    for busy in (0.5, 0.11, None):
        measured = speedup_result([(0.8, 0.76, 0.84)] * 3, host_busy=busy)
        decided = decide(Claim(None, 1.5 * 0.8, "geomean"), measured)
        assert decided.level == INCONCLUSIVE, busy
    assert (
        "a busy host (other work used 50% of its CPU time)"
        in decide(Claim(None, 1.5 * 0.8), speedup_result([(0.8, 0.76, 0.84)], host_busy=0.5)).reason
    )


def test_a_gpu_rerun_allows_the_busy_spread_however_quiet_its_host() -> None:
    # Timed by the wall clock around GPU work: no bench has measured the spread between such evaluations yet.
    measured = speedup_result([(0.8, 0.76, 0.84)] * 3, host_busy=0.01)
    measured["limits"] = {"clock_check": "wall clock (cgroup frozen between requests)"}
    assert decide(Claim(None, 1.5 * 0.8, "geomean"), measured).level == INCONCLUSIVE


def test_the_rule_reads_the_clock_names_the_harness_writes() -> None:
    from harness.jail.sandbox import CPU_TIME_CHECK, LATENCY_CHECK, NO_CHECK

    assert (CPU_TIME_CLOCK, LATENCY_CLOCK, UNCHECKED_CLOCK) == (CPU_TIME_CHECK, LATENCY_CHECK, NO_CHECK)


def test_a_host_share_out_of_range_counts_as_unmeasured() -> None:
    # Whatever a result says outside 0..1 is not a measure: the host counts as busy (the lenient spread).
    for said in (-0.1, 1.5, float("nan"), "0.01", True):
        measured = measured_from_result(speedup_result([(0.8, 0.76, 0.84)], host_busy=said))  # type: ignore[arg-type]
        assert measured.host_busy is None


def test_flashinfer_cases_reference_latencies_are_a_claimed_speedup() -> None:
    spec = {
        "cases": [
            {"status": "passed", "latencyNs": 100.0, "referenceLatencyNs": 400.0},
            {"status": "passed", "latencyNs": 100.0, "referenceLatencyNs": 100.0},
        ]
    }
    claim = reported_claim(spec, latency_ns=100.0)
    assert (claim.speedup, claim.speedup_statistic) == (pytest.approx(2.0), "geomean")
    assert decide(claim, speedup_result([(4.1, 4.0, 4.2), (1.0, 0.98, 1.02)]), own_hardware=False).level == REPRODUCED


def test_cases_timed_in_pairs_claim_the_median_of_their_ratios() -> None:
    # The harness's paired figure runs a few per cent off the ratio of the two medians; a rerun measures the
    # paired one, so a run that reports it is claimed at it.
    spec = {
        "cases": [
            {"status": "passed", "latencyNs": 100.0, "referenceLatencyNs": 400.0, "speedup": 4.4},
            {"status": "passed", "latencyNs": 100.0, "referenceLatencyNs": 100.0, "speedup": 1.1},
        ]
    }
    assert reported_claim(spec, latency_ns=100.0).speedup == pytest.approx(2.2)
    # A case without it: the latencies alone, as before.
    del spec["cases"][1]["speedup"]
    assert reported_claim(spec, latency_ns=100.0).speedup == pytest.approx(2.0)


def test_latencies_faster_than_the_paired_speedup_they_report_are_claimed_at_their_own_ratio() -> None:
    # A modest paired speedup beside latencies twenty times too fast would reproduce while the latencies rank
    # the run: the claim is the larger of the two.
    spec = {"cases": [{"status": "passed", "latencyNs": 5.0, "referenceLatencyNs": 100.0, "speedup": 1.0}]}
    claim = reported_claim(spec, latency_ns=5.0)
    assert claim.speedup == pytest.approx(20.0)
    assert decide(claim, speedup_result([(1.0, 0.97, 1.03)])).level == NOT_REPRODUCED


def test_a_rerun_whose_budget_ran_out_undecided_is_inconclusive_and_retried() -> None:
    wide = decide(Claim(1000.0), result(median=1150, interval=(900, 1500)))
    assert (wide.level, wide.retry) == (INCONCLUSIVE, True)
    assert "the time budget ran out before it decided" in wide.reason
    # The speedup's interval, too.
    assert decide(Claim(None, 2.0), speedup_result([(1.7, 1.2, 2.2)])).level == INCONCLUSIVE


def test_a_median_within_the_tolerance_reproduces_once_its_interval_is_narrower_than_the_tolerance() -> None:
    # 1.06x slower than claimed, the interval ±5 %: its slow end passes the tolerance, the median does not.
    settled = decide(Claim(None, 1.06), speedup_result([(1.0, 0.95, 1.05)]))
    assert settled.level == REPRODUCED
    assert "within ±5%" in settled.reason
    # The same median with an interval of ±15 %: undecided.
    assert decide(Claim(None, 1.06), speedup_result([(1.0, 0.85, 1.15)])).level == INCONCLUSIVE


def test_a_claim_far_beyond_a_noisy_reruns_whole_interval_is_not_reproduced() -> None:
    # rmsnorm-row-loop's shape on a loaded two-core machine: claimed 20 times its speedup, the rerun's
    # intervals about ±20 % wide.
    cases = [(0.16, 0.13, 0.19), (0.15, 0.12, 0.18), (0.17, 0.14, 0.2)]
    decided = decide(Claim(None, 20 * 0.16), speedup_result(cases))
    assert decided.level == NOT_REPRODUCED
    assert "even at the fast end of its 95 % interval" in decided.reason
    # A miss of 1.2 times whose interval reaches within the spread between evaluations: too noisy to tell.
    assert decide(Claim(None, 1.2 * 0.16), speedup_result(cases)).level == INCONCLUSIVE


def test_slower_beyond_the_tolerance_with_the_claim_inside_the_interval_is_inconclusive() -> None:
    assert decide(Claim(1000.0), result(median=1150, interval=(995, 1200))).level == INCONCLUSIVE


def test_a_wide_interval_whose_slow_end_meets_the_claim_still_reproduces() -> None:
    assert decide(Claim(1000.0), result(median=500, interval=(300, 1050))).level == REPRODUCED


@pytest.mark.parametrize("status", ["INCORRECT_NUMERICAL", "INCORRECT_SHAPE", "INCORRECT_DTYPE"])
def test_a_correctness_failure_is_the_kernels_at_once(status: str) -> None:
    # The judge puts the case's own seed into a round drawn at random among fresh ones: a failure on either is
    # input-dependent behaviour of the kernel's, and a wrong kernel must be convicted, not retried forever.
    decided = decide(Claim(1000.0), result(status))
    assert (decided.level, decided.retry) == (NOT_REPRODUCED, False)
    assert status in decided.reason
    assert "max abs error 0.01" in decided.reason


@pytest.mark.parametrize("status", ["REWARD_HACK", "TIMEOUT", "OUT_OF_MEMORY", "RUNTIME_ERROR"])
def test_tampering_and_other_kernel_faults_need_no_confirmation(status: str) -> None:
    decided = decide(Claim(1000.0), result(status))
    assert decided.level == NOT_REPRODUCED
    assert status in decided.reason


def test_an_evaluation_that_could_not_judge_the_kernel_decides_nothing() -> None:
    assert decide(Claim(1000.0), result("INVALID_REFERENCE")).level == INCONCLUSIVE
    assert decide(Claim(None), result()).level == INCONCLUSIVE


def test_latency_measured_on_other_hardware_is_not_compared() -> None:
    other = decide(Claim(1000.0), result(median=1000), own_hardware=False)
    assert (other.level, other.retry) == (INCONCLUSIVE, False)
    assert "other hardware" in other.reason
    # A speedup is relative to the reference timed beside it: it is still compared (and shown).
    assert decide(Claim(1000.0, 2.0), speedup_result([(2.0, 1.95, 2.05)]), own_hardware=False).level == REPRODUCED


def test_a_stored_result_run_is_judged_as_the_result_it_was_made_from() -> None:
    workload = make_document("Workload", "demo-rmsnorm", {"definition": {"source": "kernelindex", "name": "rmsnorm"}})
    implementation = make_document("Implementation", "rmsnorm-fast", {"name": "rmsnorm-fast"})
    of = RerunOf("abcdef123456", "sha256:" + "b" * 64, "rmsnorm", 7)
    for outcome in (
        speedup_result([(1.5, 1.45, 1.55), (0.9, 0.85, 0.95)]),
        # Measured on a quiet host: the claims of 1.2 and 1.3 are convicted only as long as that is stored.
        speedup_result([(0.8, 0.76, 0.84)] * 2, host_busy=0.02),
        result(median=1150, interval=(1100, 1200)),
        result("INCORRECT_NUMERICAL"),
    ):
        manifest = rerun_manifest(
            of, outcome, workload=workload, implementation=implementation, observed_at="2026-12-01T10:00:00Z"
        )
        for claim in (Claim(1000.0), Claim(1000.0, 1.2, "mean"), Claim(1000.0, 1.3)):
            stored = measured_from_run(manifest["run"]["spec"])
            assert verdict(claim, stored, 0.1) == decide(claim, outcome)


def test_the_result_is_a_native_manifest_linked_to_the_original() -> None:
    workload = make_document("Workload", "demo-rmsnorm", {"definition": {"source": "kernelindex", "name": "rmsnorm"}})
    implementation = make_document("Implementation", "rmsnorm-fast", {"name": "rmsnorm-fast"})
    of = RerunOf("abcdef123456", "sha256:" + "b" * 64, "rmsnorm", 7)
    manifest = rerun_manifest(
        of, result(median=1234), workload=workload, implementation=implementation, observed_at="2026-12-01T10:00:00Z"
    )
    summary = summarize(manifest_item(manifest, _path(), None, redigest=False, rerun_result=True))
    assert summary.source == "kernelindex"
    assert summary.external_id == "rerun/abcdef123456/7"
    assert summary.status == "passed"
    assert summary.primary_statistic == "median"
    assert summary.latency_ns == 1234
    # The protocol the rerun followed is part of its comparability family, so of its comparison group.
    assert summary.group.family == "kernelindex_harness/kernelindex/1"
    assert manifest["protocol"]["spec"]["protocol"] == {"name": "kernelindex", "version": "1"}
    assert manifest["run"]["spec"]["rerunOf"] == {"runId": "abcdef123456", "digest": "sha256:" + "b" * 64}
    assert manifest["environment"]["spec"]["hardware"]["class"] == "cpu"
    assert manifest["environment"]["spec"]["software"]["libraries"]["torch"] == "2.13.0"


def test_a_failed_rerun_is_a_failed_run_without_timing() -> None:
    workload = make_document("Workload", "demo-rmsnorm", {"definition": {"source": "kernelindex", "name": "rmsnorm"}})
    implementation = make_document("Implementation", "rmsnorm-wrong", {"name": "rmsnorm-wrong"})
    manifest = rerun_manifest(
        RerunOf("abcdef123456", "sha256:" + "b" * 64, "rmsnorm", 8),
        result("INCORRECT_NUMERICAL"),
        workload=workload,
        implementation=implementation,
        observed_at="2026-12-01T10:00:00Z",
    )
    summary = summarize(manifest_item(manifest, _path(), None, redigest=False, rerun_result=True))
    assert summary.status == "failed"
    assert summary.latency_ns is None
    case = manifest["run"]["spec"]["cases"][0]
    # Spelled as imported cases are, so the result run's own page shows them in its per-case table.
    assert (case["status"], case["sourceStatus"]) == ("failed", "INCORRECT_NUMERICAL")
    assert case["message"] == "case 1: max abs error 0.01 at [0, 3]"


def _path() -> Any:
    from pathlib import Path

    return Path("rerun:test")


def test_a_pass_whose_clock_the_harness_could_not_check_decides_nothing() -> None:
    unchecked = {**result(median=1000), "limits": {"clock_check": "none"}}
    checked = {**result(median=1000), "limits": {"clock_check": "cpu time (cgroup)"}}

    decided = decide(Claim(1000.0), unchecked)

    assert decided.level == INCONCLUSIVE
    assert "could not measure the kernel apart from the reference" in decided.reason
    assert decide(Claim(1000.0), checked).level == REPRODUCED


def test_a_median_beyond_the_spread_convicts_however_wide_the_interval_the_kernel_made() -> None:
    # A kernel that sleeps between its calls ends each case's budget after a few pairs: its interval about
    # ±40 %, so its fast end stays within the spread of a claim twice its speedup. Its median does not.
    noisy = speedup_result([(0.8, 0.5, 1.12)] * 3)
    decided = decide(Claim(None, 2 * 0.8, "geomean"), noisy)
    assert decided.level == NOT_REPRODUCED and decided.rule_version == RULE_VERSION
    assert "the kernel's own noise is its own" in decided.reason
    # On a quiet host, half again is beyond the quiet spread; beside other work it stays undecided, as narrow.
    quiet = speedup_result([(0.8, 0.5, 1.12)] * 3, host_busy=0.02)
    assert decide(Claim(None, 1.5 * 0.8, "geomean"), quiet).level == NOT_REPRODUCED
    assert decide(Claim(None, 1.5 * 0.8, "geomean"), noisy).level == INCONCLUSIVE
    # An honest claim with the same wide interval is never convicted.
    assert decide(Claim(None, 0.8, "geomean"), noisy).level != NOT_REPRODUCED
