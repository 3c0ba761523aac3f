"""The run page: the seed's anatomy, ranks, the manifest viewer, citations and the JSON twin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from records.canonical import digest_of_bytes
from runs.models import Run
from tests.conftest import SEED_MANIFEST, ImportRuns
from tests.pages import squeezed, visible_text

# Every line of the seed page (../shared/reference) that the seed's record determines, in today's words: keys
# as labels, the hardware under that name, and no project or revision that repeats another row (issue #14).
SEED_LINES = [
    "Primary measurement",
    "175.5µs mean",
    "observed 2026-04-20",
    "SOL 0.3256 · 0.55× reference (mean of per-case speedups) · 0/16 cases faster",
    "Identity",
    "implementation Amir M. Mir | SF Tensor",
    "workload suite of 16 cases · mean latency",
    "comparison key sha256:",
    "source NVIDIA SOL-ExecBench",
    "external id submission/1307",
    "Correctness",
    "Marked passed by the source; the correctness policy was not published.",
    "Workload",
    "definition comparator sol_execbench_eval",
    "description Correctness must pass on every case in the SOL evaluation stack.",
    "Measurements",
    "latency · mean 175.5 µs",
    "Protocol",
    "harness SOL-ExecBench evaluation stack v1.0",
    "timer harness_reported",
    "primary statistic mean",
    "correctness reference definition reference implementation",
    "comparability family sol_execbench_leaderboard",
    "Environment",
    "hardware NVIDIA B200 (sm_100)",
    "Files",
    "No files published with this run.",
    "Replications and notes",
    "No one has added a reproduction or a note yet.",
    "Community attestations. They never change the evidence level; only a KernelIndex-controlled rerun does.",
    "Add a reproduction or note",
    "Canonical manifest",
    "Show manifest",
    "Cite this record (permalink, digest, access date)",
    "Report an issue with this run",
    "NVIDIA SOL-ExecBench",
    "All results for MoE expert SwiGLU with down projection backward →",
    "JSON",
]


@pytest.fixture
def seed_run(import_runs: ImportRuns) -> Run:
    import_runs(SEED_MANIFEST, redigest=True)
    return Run.objects.get()


def test_the_seed_page_shows_every_line_the_record_determines(client: Client, seed_run: Run) -> None:
    response = client.get(seed_run.get_absolute_url())
    assert response.status_code == 200
    html = response.content.decode()
    assert f"<title>Run {seed_run.run_id} · KernelIndex</title>" in html
    text = squeezed(visible_text(html))
    missing = [line for line in SEED_LINES if squeezed(line) not in text]
    assert missing == []
    assert squeezed(f"Published {seed_run.published_at:%Y-%m-%d} · NVIDIA SOL-ExecBench") in text


def test_the_seed_page_shows_the_digests_the_source_declared(client: Client, seed_run: Run) -> None:
    text = visible_text(client.get(seed_run.get_absolute_url()).content)
    assert "sha256:2964c5c4ed9cb0dc" in text
    assert "digest declared by the source" in text


def test_the_manifest_viewer_shows_the_seeds_values_and_each_digest(client: Client, seed_run: Run) -> None:
    # The run page's viewer fetches this page's fragment when it is opened.
    html = client.get(reverse("runs:manifest", args=[seed_run.run_id])).content.decode()
    text = visible_text(html)
    for value in ('"sol-submission-1307"', '"B200-ext-prod-1549"', "175457", '"sol_execbench_leaderboard"'):
        assert value in text
    assert f'title="{seed_run.digest}"' in html
    assert f'title="{seed_run.protocol_digest}"' in html
    assert 'download="run-' in html


def test_the_json_twin_is_the_canonical_manifest_byte_for_byte(client: Client, seed_run: Run) -> None:
    response = client.get(f"/runs/{seed_run.run_id}.json")
    assert response["Content-Type"] == "application/json"
    manifest = json.loads(response.content)
    # The documents, and beside them the index's own state of the run, which no digest covers.
    assert set(manifest) == {"run", "protocol", "environment", "provenance", "evidence", "reruns"}
    assert manifest["evidence"]["level"] == "reported"
    assert manifest["reruns"] == []
    # Each document sits in the twin exactly as its digest was computed.
    text = response.content.decode()
    for role, digest in (("run", seed_run.digest), ("protocol", seed_run.protocol_digest)):
        start = text.index(f'"{role}":{{"apiVersion"') + len(f'"{role}":')
        document, end = json.JSONDecoder().raw_decode(text[start:])
        assert digest_of_bytes(text[start : start + end].encode()) == digest
        assert document["kind"]


def test_the_citation_carries_permalink_digest_and_access_date(client: Client, seed_run: Run) -> None:
    text = visible_text(client.get(seed_run.get_absolute_url()).content)
    permalink = f"http://127.0.0.1:8000/runs/{seed_run.run_id}"
    assert f"@misc{{kernelindex-{seed_run.run_id}," in text
    assert f"url = {{{permalink}}}" in text
    assert '"type": "dataset"' in text
    assert f"(record digest {seed_run.digest}; accessed " in text


def test_sol_runs_show_their_source_native_rank(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "sol-execbench")
    run = Run.objects.get(external_id="18134")
    text = squeezed(visible_text(client.get(run.get_absolute_url()).content))
    assert squeezed("Rank 6 of") in text
    assert squeezed("on the source's public board · source-native comparison · observed 2026-07-07") in text


def test_runs_without_a_source_order_are_ranked_by_latency(
    client: Client, import_runs: ImportRuns, sample: Path
) -> None:
    import_runs(sample / "kernelbench")
    eager, compiled = (
        Run.objects.get(external_id=f"H100_Modal/{variant}/level1/1_Square_matrix_multiplication_.py")
        for variant in ("torch", "torch_compile_inductor_default")
    )
    slower, faster = sorted((eager, compiled), key=lambda run: -(run.latency_ns or 0))
    text = squeezed(visible_text(client.get(slower.get_absolute_url()).content))
    assert squeezed("Rank 2 in its comparison group · KernelIndex comparison") in text
    assert f'href="/compare/{slower.run_id}/{faster.run_id}"' in client.get(slower.get_absolute_url()).content.decode()


def test_a_failed_run_is_not_ranked_and_shows_its_cases(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "flashinfer-bench")
    run = Run.objects.get(status="failed")
    html = client.get(run.get_absolute_url()).content.decode()
    text = visible_text(html)
    assert "Not ranked: the run failed." in text
    assert "Failed: 22 of 25 cases passed, as reported by the source." in text
    cases_table = html[
        html.index('<table class="cases">') : html.index("</table>", html.index('<table class="cases">'))
    ]
    assert cases_table.count("<tr>") == 1 + 25
    assert visible_text(cases_table).count("INCORRECT_NUMERICAL") == 3


def test_every_section_has_an_anchor(client: Client, seed_run: Run) -> None:
    html = client.get(seed_run.get_absolute_url()).content.decode()
    for anchor in (
        "identity",
        "correctness",
        "workload",
        "measurements",
        "protocol",
        "environment",
        "artifacts",
        "notes",
        "manifest",
        "cite",
        "report",
    ):
        assert f'id="{anchor}"' in html


def test_an_unknown_run_is_a_helpful_404(client: Client, db: None) -> None:
    response = client.get("/runs/0123456789ab")
    assert response.status_code == 404
    assert "No run &#x27;0123456789ab&#x27;" in response.content.decode()
    assert 'href="/"' in response.content.decode()


def test_a_withdrawn_run_keeps_a_tombstone(client: Client, seed_run: Run) -> None:
    from django.utils import timezone

    seed_run.withdrawn_at = timezone.now()
    seed_run.withdrawn_reason = "Duplicate of another submission."
    seed_run.save()
    text = visible_text(client.get(seed_run.get_absolute_url()).content)
    assert "Withdrawn on" in text
    assert "Duplicate of another submission." in text
    assert seed_run.digest in text
    assert "Not ranked: this run was withdrawn." in text
