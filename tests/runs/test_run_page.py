"""The run page: the seed's anatomy, ranks, the manifest viewer, citations and the JSON twin."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from records.canonical import canonical_bytes, digest_of_bytes, short_digest
from runs.models import Run
from tests.conftest import SEED_MANIFEST, ImportRuns
from tests.pages import HTMX, squeezed, visible_text

# The original site's page of the seed run, as its text was extracted (DESIGN.md: the anatomy to reproduce);
# a copy of ../shared/reference/000_e47748f48de31362.txt, so that a clone alone runs this test.
SEED_PAGE = Path(__file__).resolve().parents[1] / "seed" / "run-01a0352b.page.txt"
SHARED_REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "000_e47748f48de31362.txt"
SEED = json.loads(SEED_MANIFEST.read_text())


@pytest.fixture
def seed_run(import_runs: ImportRuns) -> Run:
    import_runs(SEED_MANIFEST, redigest=True)
    return Run.objects.get()


@pytest.fixture
def seed_in_its_group(import_runs: ImportRuns, sample: Path, tmp_path: Path) -> Run:
    """The seed run where the original site showed it: 14th on its kernel's public board, whose first run is
    indexed too (the page's "Compare with #1"). The board is made for the test: the published snapshot of
    kernel 17 is of a later day, when the seed's score was off it."""
    import_runs(sample / "sol-execbench" / "problems" / "17")  # the definition, known by its kernel id 17
    seed_score = SEED["run"]["spec"]["sourceNative"]["metrics"]["sol_score"]
    scores = [round(0.9 - 0.04 * place, 6) for place in range(13)] + [seed_score, 0.2]
    board = {"17": {"top_sol": scores[0], "top_user": "first", "n": len(scores), "sol_bound": 1.0, "scores": scores}}
    (tmp_path / "leaderboard.json").write_text(json.dumps(board))
    first = copy.deepcopy(SEED)
    first["run"]["metadata"]["name"] = "sol-submission-1306"
    first["run"]["spec"]["sourceNative"]["externalId"] = "1306"
    first["run"]["spec"]["sourceNative"]["metrics"]["sol_score"] = scores[0]
    (tmp_path / "first.json").write_text(json.dumps(first))
    import_runs(tmp_path / "first.json", SEED_MANIFEST, redigest=True)
    import_runs(tmp_path / "leaderboard.json")
    return Run.objects.get(external_id="1307")


def page_as_read(client: Client, run: Run) -> str:
    """The run page's visible text, its <title> included, with "Show manifest" opened: htmx then puts what
    the manifest URL answers it in place of #manifest-body (hx-get, hx-swap outerHTML), as this does."""
    html = client.get(run.get_absolute_url()).content.decode()
    viewer = client.get(reverse("runs:manifest", args=[run.run_id]), headers=HTMX).content.decode()
    body = re.search(r'<div id="manifest-body">.*?</div>', html, re.DOTALL)
    assert body is not None
    return visible_text(html[: body.start()] + viewer + html[body.end() :])


def seed_page_lines(run: Run) -> tuple[list[str], list[str]]:
    """(the lines around the manifest, the manifest's lines) of the original page, with the values the
    original site made by recipes of its own replaced by KernelIndex's for the same thing."""
    text = SEED_PAGE.read_text()
    declared = SEED["run"]["spec"]
    for original, ours in [
        # The permalink id: KernelIndex's is the first 12 hex digits of sha256(source, external id) (docs/records.md).
        ("01a0352b", run.run_id),
        # The comparison key and the run's digest, which the page shows cut short: KernelIndex's digests.
        ("sha256:9c30d4100296278b…", short_digest(run.group.key) + "…"),
        ("sha256:bcac4b197aba0543b89e933…", short_digest(run.digest) + "…"),
        # The manifest's protocol and environment digests: the seed declares digests of another recipe, and
        # --redigest stores the run under the RFC 8785 digests of its documents (the page shows both).
        (declared["protocolDigest"], run.protocol_digest),
        (declared["environmentDigest"], run.environment_digest),
        # The day the record was published on the index: here, the day of the import.
        ("Published 2026-08-24", f"Published {run.published_at:%Y-%m-%d}"),
    ]:
        assert original in text
        text = text.replace(original, ours)
    lines = [line for line in text.splitlines() if line.strip()]
    opening = lines.index("Show manifest") + 1
    closing = lines.index("Cite this record (permalink, digest, access date)")
    return lines[:opening] + lines[closing:], lines[opening:closing]


def test_the_shipped_seed_page_is_the_shared_reference() -> None:
    if not SHARED_REFERENCE.is_file():
        pytest.skip("no ../shared/reference beside this checkout")
    assert SEED_PAGE.read_bytes() == SHARED_REFERENCE.read_bytes()


def test_the_seed_page_holds_every_line_of_the_original_in_its_order(client: Client, seed_in_its_group: Run) -> None:
    around, manifest = seed_page_lines(seed_in_its_group)
    # Whitespace only is normalised: the original's text extraction joined a label to its value ("gpuNVIDIA").
    text = squeezed(page_as_read(client, seed_in_its_group))
    missing, position = [], 0
    for line in around:
        found = text.find(squeezed(line), position)
        if found < 0:
            missing.append(line)
        else:
            position = found + len(squeezed(line))
    assert missing == []
    # The manifest is pretty JSON: the original listed each object's keys in PostgreSQL jsonb's order (shorter
    # keys first), KernelIndex in RFC 8785's (sorted), so each line is looked for on its own, and without the
    # comma that follows a member only where another comes after it in that order.
    viewer = text[text.index(squeezed("Show manifest")) : text.index(squeezed("Cite this record"))]
    assert [line for line in manifest if squeezed(line).rstrip(",") not in viewer] == []


def test_the_seed_page_says_what_the_original_did_in_its_words(client: Client, seed_run: Run) -> None:
    # Alone in its group, the seed keeps every sentence the record itself determines.
    text = visible_text(client.get(seed_run.get_absolute_url()).content)
    for line in [
        "SOL 0.3256 · 0.55× reference · 0/16 cases faster",
        "project Amir M. Mir | SF Tensor",
        "revision submission-1307",
        "Artifacts # No artifacts published with this run.",
        "No attestations yet.",
        "gpu NVIDIA B200 (sm_100)",
    ]:
        assert line in text


def test_the_seed_page_shows_the_digests_the_source_declared_beside_its_own(client: Client, seed_run: Run) -> None:
    html = client.get(seed_run.get_absolute_url()).content.decode()
    identity = html[html.index('id="identity"') : html.index('id="correctness"')]
    text = visible_text(identity)
    for role in ("protocol", "environment"):
        computed = digest_of_bytes(canonical_bytes(SEED[role]))
        declared = SEED["run"]["spec"][f"{role}Digest"]
        assert computed != declared
        assert f'title="{computed}"' in identity and f'title="{declared}"' in identity
        assert squeezed(
            f"{role} {short_digest(computed)}… Copy computed by KernelIndex (RFC 8785) "
            f"{short_digest(declared)}… Copy digest declared by the source"
        ) in squeezed(text)


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
    assert set(manifest) == {
        *("run", "protocol", "environment", "provenance"),
        *("evidence", "reruns", "verification", "floor"),
    }
    assert manifest["evidence"]["level"] == "reported"
    assert manifest["reruns"] == []
    assert manifest["verification"]["state"] == "off"  # the tests' default (tests/conftest.py)
    assert manifest["floor"]["fasterThanPhysicallyPossible"] is False
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
    assert squeezed("Rank 6 in its comparison group · source-native comparison · observed 2026-07-07") in text
    assert squeezed("Its rank on the source's public board: 6 of") in text


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
