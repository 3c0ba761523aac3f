"""The run page leads with the evidence (issue #14): the reported figure beside the deciding rerun's, a rerun's
own page, per-case tables named by their axes, labels people read, and ranks that do not contradict themselves."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from runs.display import axes_text, shape_text
from runs.models import Definition, Run
from tests.conftest import ImportRuns
from tests.pages import visible_text
from tests.runs.run_page_reruns import demo_case_uuids, record_rerun, result_on_cases
from verification.models import RerunRequest

pytestmark = pytest.mark.usefixtures("memory_broker")


def section(html: str, section_id: str) -> str:
    """The visible text of one <section id=…> of a page, without the space tags leave before punctuation."""
    start = html.rindex("<", 0, html.index(f'id="{section_id}"'))
    text = visible_text(html[start : html.index("</section>", start)])
    return re.sub(r"\s+([:;,.)])", r"\1", text)


def page_html(client: Client, run: Run) -> str:
    response = client.get(run.get_absolute_url())
    assert response.status_code == 200
    return response.content.decode()


# -- the top block (item 2) ----------------------------------------------------------


def test_the_top_block_shows_the_reported_figure_and_the_deciding_reruns(
    client: Client, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-vectorised")
    assert run.latency_ns is not None
    rerun = record_rerun(run, result_on_cases(run, median=run.latency_ns / 2))
    assert rerun.verdict == "reproduced"
    top = section(page_html(client, run), "measurement")
    assert "Reported by KernelIndex on CPU · AMD EPYC" in top
    assert f"KernelIndex rerun #{rerun.pk}:" in top
    half = run.latency_ns / 2
    low, high = (f"{ns / 1000:.1f} µs" for ns in (half * 0.98, half * 1.02))
    assert f"median (95 % interval {low} – {high}) on CPU · Intel Xeon · 0.50× the reported median (faster)" in top
    assert "Evidence: Reproduced" in top


def test_without_a_conclusive_rerun_the_top_block_says_so(client: Client, demo: Callable[[str], Run]) -> None:
    run = demo("rmsnorm-vectorised")
    assert "No conclusive KernelIndex rerun yet on CPU" in section(page_html(client, run), "measurement")
    # A rerun on other hardware decides nothing, so it is not the one the page leads with.
    other = record_rerun_on(run, "nvidia-h100")
    assert other.verdict == ""
    assert "No conclusive KernelIndex rerun yet on CPU" in section(page_html(client, run), "measurement")


def record_rerun_on(run: Run, hardware: str) -> RerunRequest:
    from tests.runs import attested
    from verification.reruns import request_rerun

    return attested.finish(request_rerun(run, user=None, hardware=hardware), result_on_cases(run, median=1e9))


def test_a_rerun_that_failed_correctness_leads_with_its_failure(client: Client, demo: Callable[[str], Run]) -> None:
    run = demo("softmax-exp2")
    rerun = record_rerun(run, result_on_cases(run, "INCORRECT_NUMERICAL"))
    assert rerun.verdict == "not_reproduced"
    top = section(page_html(client, run), "measurement")
    assert f"KernelIndex rerun #{rerun.pk}: no latency, it ended INCORRECT_NUMERICAL on CPU · Intel Xeon" in top


# -- a rerun's own page (item 3) ---------------------------------------------------------


def test_a_reruns_result_page_names_the_run_it_reran_and_its_verdict(
    client: Client, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-row-loop")
    rerun = record_rerun(run, result_on_cases(run, median=(run.latency_ns or 0) * 40))
    assert rerun.result_run is not None and rerun.verdict == "not_reproduced"
    html = page_html(client, rerun.result_run)
    text = visible_text(html)
    assert f"This is a KernelIndex rerun (rerun #{rerun.pk}) of run {run.run_id}" in text
    assert f'href="{run.get_absolute_url()}#rerun-{rerun.pk}"' in html
    assert "Its verdict on that run: Not reproduced" in text
    assert "as the source published it" not in text
    assert "as the source reported them" not in text
    assert "Per-case results, as this KernelIndex rerun measured them" in text
    assert "as the KernelIndex rerun measured it" in section(html, "correctness")


# -- per-case tables (item 4) --------------------------------------------------------------


def test_case_tables_name_cases_by_axes_with_readable_errors_and_one_spelling(
    client: Client, demo: Callable[[str], Run]
) -> None:
    run = demo("softmax-exp2")
    rerun = record_rerun(run, result_on_cases(run, "INCORRECT_NUMERICAL"))
    assert rerun.result_run is not None
    html = page_html(client, run)
    reruns = section(html, "reruns")
    assert not [uuid for uuid in demo_case_uuids(run) if uuid in reruns]
    assert "batch_size=8, seq_len=1024" in reruns
    assert "case batch_size=8, seq_len=1024: max abs error 0.01" in reruns  # the failure reason too
    assert "1.91e-06" in reruns and "3.21e-07" in reruns
    assert "0.0000019073486328125" not in reruns
    assert "INCORRECT_NUMERICAL" in reruns
    assert "PASSED" not in reruns  # the harness's spelling is not the run statuses'
    assert "Passed" in reruns  # the run statuses' spelling, as the run's own status is spelled
    # The verdict says why; a failure row would only say it again. Once there, once in the failed case's log.
    assert reruns.count("max abs error 0.01 at [0, 3]") == 2
    assert "<dt>failure</dt>" not in html


def test_reported_cases_show_their_paired_speedup_else_the_ratio_of_both_latencies(
    client: Client, demo: Callable[[str], Run]
) -> None:
    # The median of the pairs' ratios where the case reports it (a 20x-too-fast run reports 20x it) ...
    measurements = section(page_html(client, demo("rmsnorm-row-loop")), "measurements")
    assert "batch_size=128 Passed 123.7 µs — 529.8 µs 10 ns 4.55×" in measurements
    # ... else the reference's latency over the solution's.
    measurements = section(page_html(client, demo("softmax-exp2")), "measurements")
    assert "batch_size=8, seq_len=1024 Passed 118.4 µs — 113.4 µs 3 ns 0.96×" in measurements


def test_failed_cases_show_the_sources_code_beside_one_status_spelling(
    client: Client, import_runs: ImportRuns, sample: Path
) -> None:
    import_runs(sample / "flashinfer-bench")
    run = Run.objects.get(status="failed")
    measurements = section(page_html(client, run), "measurements")
    assert "M=16294 Failed INCORRECT_NUMERICAL" in measurements
    assert "1.28e+03" in measurements and "1277.6507568359375" not in measurements


# -- the SOL run page (item 6) -----------------------------------------------------------------


def test_a_sol_run_states_its_board_rank_and_its_place_among_indexed_runs(
    client: Client, import_runs: ImportRuns, sample: Path
) -> None:
    import_runs(sample / "sol-execbench")
    run = Run.objects.get(external_id="18332")
    top = section(page_html(client, run), "measurement")
    assert "Rank 9 in its comparison group · source-native comparison" in top
    assert "Its rank on the source's public board: 9 of 12." in top
    assert "The only run KernelIndex indexes from this board; the board entries ranked above it are not indexed" in top
    assert "top indexed run" not in top
    # avg_speedup is SOL-ExecBench's mean of per-case speedups, not the ratio of the latencies beside it.
    assert "1.93× reference ·" in top
    assert "× reference: the mean of per-case speedups, not the ratio of the latencies." in top


# -- wording (item 7) and hardware (item 8) ----------------------------------------------------


def test_the_seeds_labels_are_kept_and_other_keys_are_shown_as_words(
    client: Client, import_runs: ImportRuns, sample: Path
) -> None:
    import_runs(sample / "sol-execbench")
    html = page_html(client, Run.objects.get(external_id="18332"))
    protocol, environment = section(html, "protocol"), section(html, "environment")
    # The seed page's own labels (issue #24), then the keys it does not show, in words.
    assert "primaryStatistic mean" in protocol and "comparabilityFamily sol_execbench_leaderboard" in protocol
    assert "gpu NVIDIA B200 (sm_100)" in environment
    assert "evaluation stack v1.0" in environment and "evaluation_stack" not in environment


def test_a_reruns_statistics_are_labelled_in_words(client: Client, demo: Callable[[str], Run]) -> None:
    run = demo("rmsnorm-vectorised")
    rerun = record_rerun(run, result_on_cases(run, median=(run.latency_ns or 0) / 2))
    assert rerun.result_run is not None
    measurements = section(page_html(client, rerun.result_run), "measurements")
    assert "latency · 95 % interval, high end" in measurements
    assert "ci95High" not in measurements and "stdev" not in measurements


def test_a_sol_submission_is_named_once(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "sol-execbench")
    html = page_html(client, Run.objects.get(external_id="18332"))
    before_manifest = visible_text(html[: html.index('id="manifest"')])
    assert before_manifest.count("18332") == 1
    assert "external id submission/18332" in before_manifest


def test_the_citation_and_the_report_form_follow_the_notes_in_the_seed_pages_order(
    client: Client, demo: Callable[[str], Run]
) -> None:
    # The original site's page: notes, the manifest, "Cite this record", then "Report an issue with this run".
    html = page_html(client, demo("rmsnorm-vectorised"))
    assert html.index('id="notes"') < html.index('id="cite"') < html.index('id="report"')


def test_the_status_says_what_measured_and_passed_mean(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "kernelbench")
    measured = section(page_html(client, Run.objects.filter(status="measured").first() or Run()), "correctness")
    assert "Status Measured (as the source reported it): Only timed, not checked" in measured


def test_the_same_host_has_one_hardware_label_on_the_run_and_its_rerun(
    client: Client, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-vectorised")
    rerun = record_rerun(run, result_on_cases(run, median=(run.latency_ns or 0) / 2))
    assert rerun.result_run is not None
    original = section(page_html(client, run), "environment")
    result = section(page_html(client, rerun.result_run), "environment")
    assert "hardware CPU · AMD EPYC" in original
    assert "hardware CPU · Intel Xeon" in result  # one class label, CPU, whatever the model
    assert "CPU · Intel Xeon" in section(page_html(client, run), "reruns")


# -- numbers (item 11) ----------------------------------------------------------------------------


def test_numbers_carry_no_float_noise_and_scalars_are_scalars(
    client: Client, import_runs: ImportRuns, sample: Path
) -> None:
    assert axes_text({"max_atol": 0.027999999999999997, "batch_size": 8}) == "max_atol=0.028, batch_size=8"
    assert shape_text(None) == "scalar" and shape_text(["batch_size", 2048]) == "[batch_size, 2048]"
    import_runs(sample / "sol-execbench")
    for definition in Definition.objects.filter(source="sol-execbench"):
        text = visible_text(client.get(definition.get_absolute_url()).content)
        assert "0.027999999999999997" not in text
        assert "[None]" not in text


# -- the rerun form (item 12) ----------------------------------------------------------------------


def test_the_rerun_form_offers_the_registered_classes_empty_by_default(
    client: Client, moderator: User, demo: Callable[[str], Run]
) -> None:
    run = demo("rmsnorm-vectorised")
    client.force_login(moderator)
    html = page_html(client, run)
    form = html[html.index('class="rerun-form"') : html.index("</form>", html.index('class="rerun-form"'))]
    assert '<select name="hardware"' in form
    assert '<option value="" selected>' in form
    assert '<option value="nvidia-h100">NVIDIA H100</option>' in form and '<option value="cpu">CPU</option>' in form
    response = client.post(f"/runs/{run.run_id}/rerun", {"hardware": "nvidia-h1OO"}, follow=True)
    assert response.status_code == 200
    assert "Not queued" in section(response.content.decode(), "reruns")
    assert not RerunRequest.objects.exists()


def test_a_moderator_sees_one_notice_at_a_time(
    client: Client, moderator: User, demo: Callable[[str], Run], django_capture_on_commit_callbacks: object
) -> None:
    run = demo("rmsnorm-vectorised")
    client.force_login(moderator)
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
        client.post(f"/runs/{run.run_id}/rerun", {"reason": "check"})
    response = client.get(run.get_absolute_url())
    rerun = RerunRequest.objects.get()
    notices = reruns_notices(response.content.decode())
    # Before, the page said it three times: the message, where the rerun stands, and that no worker is live.
    assert notices == [
        f"Rerun #{rerun.pk} is queued for a cpu worker since {rerun.sent_at:%Y-%m-%d %H:%M:%S} UTC. "
        "No cpu worker is live: it waits until one starts."
    ]
    assert "a rerun requested on cpu waits" not in section(response.content.decode(), "reruns")
    # A refusal is the one notice while it is news.
    response = client.post(f"/runs/{run.run_id}/rerun", {}, follow=True)
    assert reruns_notices(response.content.decode()) == [
        "Not queued: a rerun of this run is already queued or running."
    ]


def reruns_notices(html: str) -> list[str]:
    reruns = html[html.index('id="reruns"') : html.index("</section>", html.index('id="reruns"'))]
    return [visible_text(part.split("</p>")[0].split(">", 1)[1]) for part in reruns.split('<p class="notice')[1:]]
