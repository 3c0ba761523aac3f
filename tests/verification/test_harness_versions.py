"""/harness and /harness/<digest>: each harness version's hostile cases, from its suite's record, and its reruns."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from harness import HARNESS_NAME, HARNESS_VERSION, harness_digest
from records import harness_suites
from records.harness_suites import HELD, NOT_HELD, HarnessVersion, RecordedCase, SuiteRecord, write_record
from records.rerun import judged_by
from runs.models import Run
from tests.conftest import ImportRuns
from tests.pages import visible_text
from tests.runs.conftest import DEMO
from verification.models import RerunRequest

OLD = "sha256:" + "ab" * 32
HOSTILE_NAME = "<script>alert(1)</script> forged lines"


@pytest.fixture
def suites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of suite records standing in for harness/suites/: this harness's, with a hostile attack name."""
    monkeypatch.setattr(harness_suites, "SUITES_FOLDER", tmp_path)
    cases = [
        RecordedCase.from_nodeid(f"tests/harness/test_hostile.py::test_fails[{HOSTILE_NAME}]", HELD, 1.5),
        RecordedCase.from_nodeid("tests/harness/test_sandbox.py::test_a_solution_never_runs_as_root", HELD, 0.7),
    ]
    current = HarnessVersion(name=HARNESS_NAME, version=HARNESS_VERSION, digest=harness_digest())
    write_record(tmp_path, SuiteRecord(harness=current, recordedAt="2026-12-06T08:00:00Z", cases=cases))
    old = HarnessVersion(name=HARNESS_NAME, version="0.2.0", digest=OLD)
    broken = RecordedCase.from_nodeid("tests/harness/test_hostile.py::test_fails[patched timer]", NOT_HELD, 2.0)
    write_record(tmp_path, SuiteRecord(harness=old, recordedAt="2026-11-01T08:00:00Z", cases=[broken]))
    return tmp_path


def a_demo_run(import_runs: ImportRuns) -> Run:
    import_runs(DEMO)
    run = Run.objects.order_by("run_id").first()
    assert run is not None
    return run


def judged_rerun(run: Run, digest: str, version: str) -> RerunRequest:
    return RerunRequest.objects.create(
        run=run,
        run_digest=run.digest,
        hardware="cpu",
        state=RerunRequest.State.SUCCEEDED,
        verdict="reproduced",
        finished_at=timezone.now(),
        harness_digest=digest,
        harness_version=version,
    )


@pytest.mark.django_db
def test_the_versions_page_lists_the_current_first_with_its_hostile_cases_held(client: Client, suites: Path) -> None:
    page = visible_text(client.get("/harness").content)
    twin = client.get("/harness.json").json()["versions"]

    assert [version["version"] for version in twin] == [HARNESS_VERSION, "0.2.0"]
    assert twin[0]["current"]
    assert twin[0]["hostileCases"] == {"recordedAt": "2026-12-06T08:00:00Z", "held": 2, "total": 2}
    assert f"{HARNESS_VERSION} current" in page and "2 of 2 held" in page and "0 of 1 held" in page


@pytest.mark.django_db
def test_a_versions_page_lists_its_hostile_cases_escaped_and_the_reruns_it_judged(
    client: Client, suites: Path, import_runs: ImportRuns
) -> None:
    run = a_demo_run(import_runs)
    rerun = judged_rerun(run, harness_digest(), HARNESS_VERSION)
    judged_rerun(run, OLD, "0.2.0")
    url = f"/harness/{harness_digest().removeprefix('sha256:')}"

    response = client.get(url)
    twin = client.get(f"{url}.json").json()

    assert response.status_code == 200
    assert b"<script>alert" not in response.content and HOSTILE_NAME in visible_text(response.content)
    assert "a solution never runs as root" in visible_text(response.content)
    assert [listed["rerun"] for listed in twin["rerunsListed"]] == [rerun.pk] and twin["reruns"] == 1
    assert twin["hostileCases"]["cases"][0]["attack"] == HOSTILE_NAME
    assert run.run_id in visible_text(response.content)


@pytest.mark.django_db
def test_a_version_only_seen_judging_a_rerun_has_a_page_saying_its_cases_were_not_recorded(
    client: Client, suites: Path, import_runs: ImportRuns
) -> None:
    run = a_demo_run(import_runs)
    unrecorded = "sha256:" + "cd" * 32
    judged_rerun(run, unrecorded, "0.1.0")

    page = visible_text(client.get(f"/harness/{'cd' * 32}").content)

    assert "Harness 0.1.0" in page and "No record of this version's hostile cases" in page


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", [f"/harness/{'ef' * 32}", f"/harness/{'ef' * 32}.json", "/harness/sha256:abc", "/harness/../etc"]
)
def test_a_version_neither_recorded_nor_seen_or_a_malformed_digest_is_a_404(
    client: Client, suites: Path, path: str
) -> None:
    assert client.get(path).status_code == 404


@pytest.mark.parametrize(
    "named",
    [None, "sha256:abc", {"digest": "sha256:" + "A" * 64}, {"digest": 7}, {"version": "1", "digest": "md5:00"}, []],
)
def test_a_result_naming_no_harness_or_a_malformed_digest_names_none(named: object) -> None:
    assert judged_by(named) == ("", "")


def test_a_result_naming_its_harness_names_its_version_and_digest() -> None:
    assert judged_by({"name": HARNESS_NAME, "version": "0.3.0", "digest": OLD}) == ("0.3.0", OLD)
    assert judged_by({"version": "v" * 500, "digest": OLD})[0] == "v" * 100
