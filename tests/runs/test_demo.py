"""The demo set: it imports cleanly, in any order, twice; its pages show code and references; it is up to date."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from django.test import Client

from records.canonical import canonical_text
from records.hardware import hardware_class
from records.manifest import manifest_item
from records.sources.runnable import read_definition_folder, read_solution
from runs.models import Definition, Document, Run
from tests.conftest import ImportRuns
from tests.pages import squeezed, visible_text

DEMO = Path(__file__).resolve().parent.parent.parent / "demo"
REPORTED = DEMO / "runs" / "reported.jsonl"
ROLES = ("run", "protocol", "environment", "workload", "implementation")
DEFINITIONS = sorted(path for path in (DEMO / "definitions").iterdir() if path.is_dir())
SOLUTIONS = sorted((DEMO / "solutions").glob("*/*/solution.json"))


def build_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("demo_build", DEMO / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def reported_manifests() -> list[dict[str, Any]]:
    return [json.loads(line) for line in REPORTED.read_text().splitlines()]


def expected_digests() -> set[str]:
    """Every document the demo holds, computed from its files without a database."""
    digests = {read_definition_folder(folder)[0].digest for folder in DEFINITIONS}
    digests |= {read_solution(path).digest for path in SOLUTIONS}
    for line, manifest in enumerate(reported_manifests(), start=1):
        item = manifest_item(manifest, REPORTED, line, redigest=False)
        digests |= {sealed.digest for sealed in item.documents.values()}
    return digests


def demo_run(name: str) -> Run:
    return Run.objects.get(source="kernelindex", external_id=f"demo/{name}")


@pytest.fixture
def demo(import_runs: ImportRuns) -> None:
    import_runs(DEMO)


def test_the_demo_has_what_a_demo_needs() -> None:
    names = {folder.name for folder in DEFINITIONS}
    assert {"rmsnorm_h2048", "softmax_h8", "swiglu_mlp_h256_i512", "gemm_n256_k512"} <= names
    definitions = {folder.name: json.loads((folder / "definition.json").read_text()) for folder in DEFINITIONS}
    assert any("reference" in d for d in definitions.values())
    assert any((folder / "reference.py").is_file() for folder in DEFINITIONS)
    axes = [axis for d in definitions.values() for axis in d["axes"].values()]
    assert {"const", "var", "expr"} <= {axis["type"] for axis in axes}
    assert any(tensor["shape"] is None for d in definitions.values() for tensor in d["inputs"].values())
    assert any(d.get("custom_inputs_entrypoint") for d in definitions.values())
    for folder in DEFINITIONS:
        assert len(SOLUTIONS_BY_DEFINITION[folder.name]) >= 3
        assert 2 <= len((folder / "workload.jsonl").read_text().splitlines()) <= 4


SOLUTIONS_BY_DEFINITION = {
    folder.name: [path for path in SOLUTIONS if path.parent.parent.name == folder.name] for folder in DEFINITIONS
}


def test_the_built_files_are_up_to_date() -> None:
    """demo/build.py was run after the last change to a kernel, a definition or a figure."""
    build = build_module()
    for path, text in build.solution_files().items():
        assert path.read_text() == text, f"{path} is stale: run demo/build.py"
    assert REPORTED.read_text() == build.reported_runs(), "runs/reported.jsonl is stale: run demo/build.py"


def test_the_demo_imports_cleanly(import_runs: ImportRuns) -> None:
    output = import_runs(DEMO)
    files = len(DEFINITIONS) + len(SOLUTIONS) + 1
    assert f"{files} of {files} files imported" in output
    assert Run.objects.filter(source="kernelindex").count() == len(reported_manifests()) == len(SOLUTIONS)
    assert set(Document.objects.values_list("digest", flat=True)) == expected_digests()
    assert Document.objects.filter(kind="Workload").count() == len(DEFINITIONS)
    assert Document.objects.filter(kind="Implementation").count() == len(SOLUTIONS)
    for definition in Definition.objects.filter(source="kernelindex"):
        assert set(definition.runs.values_list("workload_digest", flat=True)) == {definition.workload_digest}
        assert definition.case_count >= 2


def test_importing_the_demo_twice_changes_nothing(import_runs: ImportRuns, demo: None) -> None:
    documents = sorted(Document.objects.values_list("digest", flat=True))
    runs = sorted(Run.objects.values_list("run_id", "digest"))
    output = import_runs(DEMO)
    assert f"{len(SOLUTIONS)} runs (0 new, 0 updated, {len(SOLUTIONS)} unchanged)" in output
    assert "document" not in output
    assert sorted(Document.objects.values_list("digest", flat=True)) == documents
    assert sorted(Run.objects.values_list("run_id", "digest")) == runs


def test_in_any_order_each_document_is_stored_once(import_runs: ImportRuns) -> None:
    import_runs(*SOLUTIONS)
    import_runs(REPORTED)
    import_runs(*DEFINITIONS)
    assert set(Document.objects.values_list("digest", flat=True)) == expected_digests()
    assert Document.objects.filter(kind="Implementation").count() == len(SOLUTIONS)
    assert Document.objects.filter(kind="Workload").count() == len(DEFINITIONS)
    for definition in Definition.objects.filter(source="kernelindex"):
        assert set(definition.runs.values_list("workload_digest", flat=True)) == {definition.workload_digest}


def test_every_reported_run_is_rerunnable_on_a_cpu(demo: None) -> None:
    for run in Run.objects.filter(source="kernelindex"):
        implementation = Document.objects.get(digest=run.implementation_digest).value["spec"]
        assert implementation["solution"]["sources"]
        workload = Document.objects.get(digest=run.workload_digest).value["spec"]
        assert workload["definition"]["document"]["reference"]
        environment = Document.objects.get(digest=run.environment_digest).value["spec"]
        assert hardware_class(environment["hardware"]) == "cpu"
        assert run.primary_statistic == "median"


def test_the_demo_holds_a_run_too_fast_and_a_wrong_run_reported_passed(demo: None) -> None:
    loop, vectorised = demo_run("rmsnorm_h2048/rmsnorm-row-loop"), demo_run("rmsnorm_h2048/rmsnorm-vectorised")
    assert loop.latency_ns is not None and vectorised.latency_ns is not None
    # A Python loop over the rows claims to beat the vectorised kernel: only a rerun can tell.
    assert loop.latency_ns < vectorised.latency_ns
    assert demo_run("softmax_h8/softmax-exp2").status == "passed"
    assert demo_run("gemm_n256_k512/gemm-bf16").status == "failed"
    assert demo_run("gemm_n256_k512/gemm-bf16").latency_ns is None


def test_the_run_page_lists_the_sources_with_digests_and_shows_the_code(client: Client, demo: None) -> None:
    run = demo_run("gemm_n256_k512/gemm-torch-mm")
    html = client.get(run.get_absolute_url()).content.decode()
    section = html[html.index('id="artifacts"') : html.index('id="notes"')]
    content = json.loads((DEMO / "solutions/gemm_n256_k512/gemm-torch-mm/solution.json").read_text())["sources"][0]
    source_digest = "sha256:" + hashlib.sha256(content["content"].encode()).hexdigest()
    assert "No artifacts published" not in section
    assert f'title="{source_digest}"' in section
    text = visible_text(section)
    assert "gemm.py" in text
    assert "gemm.py::gemm · python · destination-passing style" in text
    # The code is in a <details> as plain <pre><code> text: readable without JavaScript or a stylesheet.
    assert "<details" in section and '<pre class="source"><code>' in section
    assert squeezed(content["content"]) in squeezed(text)


def test_the_run_page_escapes_the_code(client: Client, import_runs: ImportRuns, tmp_path: Path) -> None:
    solution = json.loads((DEMO / "solutions/gemm_n256_k512/gemm-torch-mm/solution.json").read_text())
    solution["sources"][0]["content"] += '\n# </code></pre><script>alert("x")</script>\n'
    manifest = reported_manifests()[-3]  # gemm-torch-mm
    assert manifest["run"]["spec"]["sourceNative"]["externalId"] == "demo/gemm_n256_k512/gemm-torch-mm"
    manifest["implementation"]["spec"]["solution"] = solution
    del manifest["run"]["spec"]["implementationDigest"]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(manifest))
    import_runs(path)
    html = client.get(Run.objects.get().get_absolute_url()).content.decode()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html


def test_the_run_twin_carries_the_reported_documents_byte_for_byte(client: Client, demo: None) -> None:
    for line in REPORTED.read_text().splitlines():
        reported = json.loads(line)
        run = Run.objects.get(external_id=reported["run"]["spec"]["sourceNative"]["externalId"])
        twin = client.get(f"/runs/{run.run_id}.json").content.decode()
        # Beside the documents, the twin holds the index's own state of the run (evidence, reruns).
        assert set(json.loads(twin)) == {*ROLES, "evidence", "reruns", "verification", "floor"}
        for role in ROLES:
            document = canonical_text(reported[role])
            assert f'"{role}":{document}' in twin
            assert f'"{role}":{document}' in line


@pytest.mark.parametrize(
    ("name", "reference_line"),
    [
        ("rmsnorm_h2048", "return hidden_states * torch.rsqrt(variance + eps) * weight"),  # inline
        ("softmax_h8", "return torch.softmax(scores, dim=-1)"),  # reference.py beside
    ],
)
def test_the_definition_page_shows_the_reference(client: Client, demo: None, name: str, reference_line: str) -> None:
    definition = Definition.objects.get(source="kernelindex", name=name)
    html = client.get(definition.get_absolute_url()).content.decode()
    section = html[html.index('id="reference"') : html.index('id="cases"')]
    assert squeezed(reference_line) in squeezed(visible_text(section))
    assert f"/documents/{definition.workload_digest}.json" in section
    assert client.get(f"/documents/{definition.workload_digest}.json").status_code == 200


def test_the_custom_inputs_entrypoint_is_named(client: Client, demo: None) -> None:
    definition = Definition.objects.get(source="kernelindex", name="swiglu_mlp_h256_i512")
    text = visible_text(client.get(definition.get_absolute_url()).content)
    assert squeezed("make_inputs builds each case's inputs") in squeezed(text)


def test_a_definition_without_its_reference_says_so(client: Client, import_runs: ImportRuns, sample: Path) -> None:
    import_runs(sample / "sol-execbench" / "problems" / "8")
    definition = Definition.objects.get()
    text = visible_text(client.get(definition.get_absolute_url()).content)
    assert "has not published this definition's reference implementation" in text


def test_the_definition_twin_keeps_its_shape(client: Client, demo: None) -> None:
    definition = Definition.objects.get(source="kernelindex", name="softmax_h8")
    twin = client.get(f"/definitions/kernelindex/{definition.name}.json").json()
    assert set(twin) == {
        "source",
        "name",
        "externalId",
        "title",
        "description",
        "subset",
        "axes",
        "inputs",
        "outputs",
        "cases",
        "groups",
    }
    assert twin["axes"]["rows"] == {"type": "expr", "expression": "batch_size * num_heads"}
    assert twin["cases"][0]["axes"] == {"batch_size": 8, "seq_len": 1024}
    assert len(twin["groups"]) == 1 and twin["groups"][0]["runs"] == 3
