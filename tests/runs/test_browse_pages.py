"""Home search and filters, definitions, sources and compare."""

from __future__ import annotations

from pathlib import Path

from django.test import Client

from runs.models import Definition, Run
from tests.conftest import ImportRuns
from tests.pages import visible_text


def test_home_lists_runs_newest_first_with_links(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "kernelbench" / "H100_Modal" / "baseline_time_torch.json")
    import_runs(sample / "sol-execbench" / "submissions.jsonl")
    payload = client.get("/index.json").json()
    assert payload["count"] == 258
    # Newest first by the date each was observed at its source; KernelBench's baselines name none, so their
    # date is the day they were published here, after every SOL submission's.
    dates = [run["observedAt"] or run["publishedAt"] for run in payload["runs"]]
    assert dates == sorted(dates, reverse=True)
    assert payload["runs"][0]["source"] == "kernelbench"
    html = client.get("/").content.decode()
    assert f'href="/runs/{payload["runs"][0]["runId"]}"' in html


def test_search_finds_definitions_implementations_and_ids(
    client: Client, import_runs: ImportRuns, sample: Path
) -> None:
    import_runs(sample / "kernelbench", sample / "sol-execbench" / "submissions.jsonl")
    by_definition = client.get("/index.json?q=rotary_position").json()
    assert {run["definition"] for run in by_definition["runs"]} == {"011_rotary_position_embedding"}
    by_implementation = client.get("/index.json?q=torch.compile").json()
    assert by_implementation["count"] == 250
    run = Run.objects.get(external_id="18134")
    assert [r["runId"] for r in client.get(f"/index.json?q={run.run_id}").json()["runs"]] == [run.run_id]
    assert client.get("/index.json?q=18134").json()["count"] == 1


def test_filters_narrow_by_source_gpu_and_evidence(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "kernelbench", sample / "sol-execbench" / "submissions.jsonl")
    assert client.get("/index.json?source=sol-execbench").json()["count"] == 8
    assert client.get("/index.json?gpu=NVIDIA+H100+80GB+HBM3").json()["count"] == 500
    assert client.get("/index.json?evidence=reproduced").json()["count"] == 0
    assert client.get("/index.json?source=kernelbench&q=1_Square_matrix").json()["count"] == 2


def test_malformed_filters_are_reported_not_a_server_error(
    client: Client, import_runs: ImportRuns, sample: Path
) -> None:
    import_runs(sample / "sol-execbench" / "submissions.jsonl")
    response = client.get("/?source=nope&gpu=Imaginary&page=-4")
    assert response.status_code == 400
    text = visible_text(response.content)
    assert "Some filters were not understood" in text
    assert "8 runs" in text  # the valid parts of the query still apply
    assert client.get("/index.json?evidence=great").status_code == 400


def test_htmx_search_returns_only_the_results(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "sol-execbench" / "submissions.jsonl")
    response = client.get("/?q=rotary", headers={"HX-Request": "true"})
    body = response.content.decode().strip()
    assert body.startswith('<div id="results"')
    assert "<html" not in body
    assert response["Vary"] and "HX-Request" in response["Vary"]


def test_empty_index_says_how_to_fill_it(client: Client, db: None) -> None:
    assert "No runs yet" in visible_text(client.get("/").content)


def test_definition_page_shows_cases_references_and_groups(
    client: Client, import_runs: ImportRuns, sample: Path
) -> None:
    import_runs(sample / "sol-execbench")
    definition = Definition.objects.get(source="sol-execbench", external_id="8")
    response = client.get(definition.get_absolute_url())
    text = visible_text(response.content)
    assert definition.title in text
    assert "SOL bound (NVIDIA B200)" in text
    assert "All results →" in text
    payload = client.get(definition.get_absolute_url() + ".json").json()
    assert len(payload["cases"]) == definition.case_count == 16
    assert set(payload["cases"][0]["references"]) == {"SOL bound (NVIDIA B200)", "scoring baseline (NVIDIA B200)"}
    assert payload["groups"][0]["hardware"] == "NVIDIA B200"


def test_definition_names_with_slashes_resolve(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "kernelbench")
    definition = Definition.objects.get(name="level1/1_Square_matrix_multiplication_.py")
    assert client.get(definition.get_absolute_url()).status_code == 200
    assert client.get(definition.get_absolute_url() + ".json").json()["name"] == definition.name


def test_unknown_definitions_and_sources_are_404(client: Client, db: None) -> None:
    assert client.get("/definitions/sol-execbench/nothing").status_code == 404
    assert client.get("/sources/somewhere").status_code == 404


def test_source_page_lists_its_runs(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "flashinfer-bench", sample / "sol-execbench" / "submissions.jsonl")
    payload = client.get("/sources/flashinfer-bench.json").json()
    assert payload["count"] == 3
    assert payload["title"] == "FlashInfer-Bench"
    assert "FlashInfer-Bench" in visible_text(client.get("/sources/flashinfer-bench").content)


def test_compare_within_a_group_shows_ratio_and_differences(
    client: Client, import_runs: ImportRuns, sample: Path
) -> None:
    import_runs(sample / "kernelbench")
    eager = Run.objects.get(external_id="H100_Modal/torch/level1/1_Square_matrix_multiplication_.py")
    compiled = Run.objects.get(
        external_id="H100_Modal/torch_compile_inductor_default/level1/1_Square_matrix_multiplication_.py"
    )
    payload = client.get(f"/compare/{eager.run_id}/{compiled.run_id}.json").json()
    assert payload["sameComparisonGroup"] is True
    assert payload["latencyRatio"] == compiled.latency_ns / eager.latency_ns  # type: ignore[operator]
    assert payload["differences"]["workload"] == []
    assert any(row["path"] == "spec.name" for row in payload["differences"]["implementation"])
    assert "same comparison group" in visible_text(client.get(f"/compare/{eager.run_id}/{compiled.run_id}").content)


def test_compare_across_groups_says_why(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "kernelbench", sample / "sol-execbench" / "submissions.jsonl")
    kernelbench = Run.objects.filter(source="kernelbench").first()
    sol = Run.objects.filter(source="sol-execbench").first()
    assert kernelbench and sol
    payload = client.get(f"/compare/{sol.run_id}/{kernelbench.run_id}.json").json()
    assert payload["sameComparisonGroup"] is False
    assert "they measure different definitions" in payload["reasons"]
    assert any("different GPUs" in reason for reason in payload["reasons"])
    text = visible_text(client.get(f"/compare/{sol.run_id}/{kernelbench.run_id}").content)
    assert "not in the same comparison group" in text


def test_compare_form_without_javascript_redirects(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "sol-execbench" / "submissions.jsonl")
    a, b = Run.objects.all()[:2]
    response = client.get(f"/compare?a={a.run_id}&b={b.run_id}")
    assert response.status_code == 302
    assert response["Location"] == f"/compare/{a.run_id}/{b.run_id}"
    assert client.get(f"/compare/{a.run_id}/ffffffffffff").status_code == 404
