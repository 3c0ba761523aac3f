"""A dump carries what KernelIndex decided and what the community said: finished reruns and their verdicts,
evidence levels and changes, approved notes and issue reports' statuses. Imported into an empty database
it gives every run's pages back as they were, and never carries who moderated, a contact, or an unapproved note."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from attestations.models import Attestation, IssueReport
from attestations.services import moderate_attestations, set_report_status
from harness.parent.worker import worker_message
from runs.dump_sections import reset_sequence
from runs.models import ComparisonGroup, Definition, Document, ImportLog, Run, RunVersion, SourceBoard
from tests.conftest import ImportRuns
from tests.pages import visible_text
from tests.runs import attested
from tests.runs.run_page_reruns import result_on_cases
from verification.collector import collect
from verification.models import EvidenceChange, RerunRequest, WorkerKey
from verification.reruns import cancel_rerun, request_rerun

pytestmark = pytest.mark.usefixtures("memory_broker")

MODERATOR = "moderator-erin-7731"
SECRETS = (
    MODERATOR,
    "erin@moderators.example",
    "note-author@example.org",
    "Unapproved: please do not publish this.",
    "reporter@example.org",
    "The report's own words, for moderators only.",
    "Resolution known to moderators alone.",
    "tests:1",  # the worker's name
    "harness log line",
)
# Each run's public pages, as a visitor reads them.
RUN_PAGES = ("/runs/{}", "/runs/{}.json", "/runs/{}/history", "/runs/{}/history.json", "/runs/{}/badge.svg")


def rerun_by(run: Run, user: User, result: dict[str, Any]) -> RerunRequest:
    """A moderator asks for a rerun and a worker records one attempt with this harness result."""
    request = request_rerun(run, user=user, reason="The claim looks fast.")
    return attested.finish(request, result, log_tail="harness log line")


@pytest.fixture
def decided(demo: Callable[[str], Run]) -> dict[str, Any]:
    """A reproduced run (with an approved reproduction, a note awaiting moderation and a triaged report), a run
    not reproduced, and a cancelled rerun; a moderator asked, approved and triaged."""
    moderator = User.objects.create_user(MODERATOR, email="erin@moderators.example", is_staff=True)
    reproduced, failed, cancelled = demo("rmsnorm-vectorised"), demo("softmax-exp2"), demo("rmsnorm-row-loop")
    assert reproduced.latency_ns is not None
    verdict = rerun_by(reproduced, moderator, result_on_cases(reproduced, median=reproduced.latency_ns / 2))
    assert verdict.verdict == "reproduced"
    rejected = rerun_by(failed, moderator, result_on_cases(failed, "INCORRECT_NUMERICAL"))
    assert rejected.verdict == "not_reproduced"
    assert cancel_rerun(request_rerun(cancelled, user=moderator), moderator)

    Attestation.objects.create(
        run=reproduced,
        kind="reproduction",
        outcome="reproduced",
        gpu="NVIDIA B200",
        body="Same on our B200.",
        author_name="Ada",
        contact_email="note-author@example.org",
    )
    Attestation.objects.create(run=reproduced, kind="note", body="Unapproved: please do not publish this.")
    moderate_attestations(Attestation.objects.filter(author_name="Ada"), "approved", moderator)
    IssueReport.objects.create(
        run=failed,
        category="wrong_numbers",
        body="The report's own words, for moderators only.",
        contact="reporter@example.org",
        resolution_note="Resolution known to moderators alone.",
    )
    set_report_status(IssueReport.objects.all(), "triaged", moderator)
    reproduced.refresh_from_db()
    assert (reproduced.evidence, reproduced.rerun_count, reproduced.note_count) == ("reproduced", 1, 1)
    return {"reproduced": reproduced, "failed": failed, "reruns": [verdict, rejected]}


def dump_into(folder: Path) -> dict[str, bytes]:
    call_command("dump", out=folder, stdout=io.StringIO())
    return {path.name: path.read_bytes() for path in folder.iterdir()}


def public_pages(client: Client) -> dict[str, str]:
    """Every public page of every run, the reruns' API pages and the verdicts' feed."""
    urls = [page.format(run_id) for run_id in Run.objects.values_list("run_id", flat=True) for page in RUN_PAGES]
    urls += [f"/api/v1/reruns/{pk}" for pk in RerunRequest.objects.values_list("pk", flat=True)]
    urls.append("/reruns/feed.atom")
    pages = {}
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        html = response["Content-Type"].startswith("text/html")
        pages[url] = visible_text(response.content) if html else response.content.decode()
    return pages


def figures() -> dict[str, Any]:
    return {
        "runs": sorted(
            Run.objects.values_list(
                "run_id", "digest", "evidence", "rerun_count", "evidence_change_count", "note_count", "published_at"
            )
        ),
        "groups": sorted(ComparisonGroup.objects.values_list("key", "run_count", "ranked_count", "best_run__run_id")),
        "reruns": sorted(
            RerunRequest.objects.values_list(
                "pk", "run__run_id", "state", "verdict", "requested_at", "finished_at", "result_run__run_id"
            )
        ),
        "changes": sorted(EvidenceChange.objects.values_list("run__run_id", "previous", "evidence", "changed_at")),
        "notes": sorted(Attestation.objects.approved().values_list("run__run_id", "body", "author_name", "created_at")),
        "reports": sorted(IssueReport.objects.values_list("run__run_id", "category", "status", "created_at")),
    }


def forget_everything() -> None:
    Run.objects.all().delete()  # with their versions, reruns, evidence changes, notes and reports
    for model in (ComparisonGroup, Definition, SourceBoard, Document, ImportLog):
        model.objects.all().delete()
    User.objects.all().delete()
    assert not RerunRequest.objects.exists() and not Attestation.objects.exists()


def test_an_empty_database_gets_every_page_of_every_run_back(
    decided: dict[str, Any], client: Client, import_runs: ImportRuns, tmp_path: Path, settings: Any
) -> None:
    settings.PAGE_CACHE_SECONDS = 0  # each page rendered from the database, never from the cache
    before, pages = figures(), public_pages(client)
    reproduced = pages[f"/runs/{decided['reproduced'].run_id}"]
    assert "Evidence: Reproduced" in reproduced and "Same on our B200." in reproduced
    assert "Wrong numbers · reported" in pages[f"/runs/{decided['failed'].run_id}"]
    assert "Not reproduced" in pages[f"/runs/{decided['failed'].run_id}/badge.svg"]
    dumped = dump_into(tmp_path / "dump")
    assert dump_into(tmp_path / "twice") == dumped  # byte-identical when made twice

    forget_everything()
    reset_sequence(RerunRequest)  # numbered from 1 again, as in a new database
    assert "1 of 1 files imported" in import_runs(tmp_path / "dump")
    assert figures() == before
    assert public_pages(client) == pages
    assert dump_into(tmp_path / "again") == dumped  # and the mirror dumps the very same bytes

    import_runs(tmp_path / "dump")  # again: nothing doubles
    assert figures() == before
    # The mirror's own next rerun takes a number after the dump's.
    numbers = [number for number, *_ in before["reruns"]]
    assert request_rerun(Run.objects.get(run_id=decided["reproduced"].run_id), user=None).pk > max(numbers)


def test_no_moderator_contact_report_text_or_unapproved_note_is_in_a_dump(decided: Any, tmp_path: Path) -> None:
    files = dump_into(tmp_path / "dump")
    for name, raw in files.items():
        text = (gzip.decompress(raw) if name.endswith(".gz") else raw).decode()
        for secret in SECRETS:
            assert secret not in text, (name, secret)
    notes = gzip.decompress(files["notes.jsonl.gz"]).decode().splitlines()
    assert len(notes) == 1 and "Same on our B200." in notes[0]
    reports = gzip.decompress(files["reports.jsonl.gz"]).decode()
    assert '"category":"wrong_numbers"' in reports and '"status":"triaged"' in reports
    reruns = gzip.decompress(files["reruns.jsonl.gz"]).decode().splitlines()
    assert [line.count('"state":"cancelled"') for line in reruns] == [0, 0, 1]


def test_a_dump_with_a_tampered_section_imports_nothing(decided: Any, import_runs: ImportRuns, tmp_path: Path) -> None:
    dump_into(tmp_path / "dump")
    forget_everything()
    reruns = tmp_path / "dump" / "reruns.jsonl.gz"
    lines = gzip.decompress(reruns.read_bytes()).replace(b'"verdict":"not_reproduced"', b'"verdict":"reproduced"')
    reruns.write_bytes(gzip.compress(lines, mtime=0))
    output = import_runs(tmp_path / "dump", fails=True)
    assert "reruns.jsonl.gz" in output and "the dump's manifest says" in output
    assert not Run.objects.exists() and not RunVersion.objects.exists() and not Document.objects.exists()
    assert not RerunRequest.objects.exists() and not Attestation.objects.exists()


def test_runs_the_database_held_keep_their_own_reruns_and_notes(
    decided: dict[str, Any], import_runs: ImportRuns, tmp_path: Path
) -> None:
    dump_into(tmp_path / "dump")
    before = figures()
    import_runs(tmp_path / "dump")
    assert figures() == before


def rewrite_manifest(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    change(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_a_section_this_site_does_not_read_is_refused_whole(
    decided: Any, import_runs: ImportRuns, tmp_path: Path
) -> None:
    dump_into(tmp_path / "dump")
    forget_everything()
    extra = gzip.compress(b'{"run":"x"}\n', mtime=0)
    (tmp_path / "dump" / "votes.jsonl.gz").write_bytes(extra)
    entry = {"sha256": hashlib.sha256(extra).hexdigest(), "bytes": len(extra), "lines": 1}

    def with_votes(manifest: dict[str, Any]) -> None:
        manifest["files"]["votes.jsonl.gz"] = entry
        manifest["sections"].append("votes.jsonl.gz")

    rewrite_manifest(tmp_path / "dump", with_votes)
    output = import_runs(tmp_path / "dump", fails=True)
    assert "votes.jsonl.gz" in output and "a section this site does not read" in output
    assert not Run.objects.exists() and not RerunRequest.objects.exists()


def test_a_manifest_naming_a_file_outside_its_folder_is_refused(
    decided: Any, import_runs: ImportRuns, tmp_path: Path
) -> None:
    dump_into(tmp_path / "dump")
    forget_everything()
    outside = {"sha256": "0" * 64, "bytes": 0, "lines": 0}
    rewrite_manifest(tmp_path / "dump", lambda m: m["files"].update({"../../etc/passwd": outside}))
    assert "is not a dump file's name" in import_runs(tmp_path / "dump", fails=True)
    assert not Run.objects.exists()


def test_a_version_1_dump_still_imports_without_sections(decided: Any, import_runs: ImportRuns, tmp_path: Path) -> None:
    dump_into(tmp_path / "dump")
    # A version 1 dump carries no reruns, so nothing attests their results: those are left out.
    runs = sorted(Run.objects.exclude(external_id__startswith="rerun/").values_list("run_id", "digest"))
    forget_everything()

    def as_version_1(manifest: dict[str, Any]) -> None:
        for name in manifest.pop("sections"):
            del manifest["files"][name]
            (tmp_path / "dump" / name).unlink()
        manifest["version"] = 1

    rewrite_manifest(tmp_path / "dump", as_version_1)
    assert "1 of 1 files imported" in import_runs(tmp_path / "dump")
    assert sorted(Run.objects.values_list("run_id", "digest")) == runs
    assert not RerunRequest.objects.exists() and set(Run.objects.values_list("evidence", flat=True)) == {"reported"}


def rewrite_lines(
    folder: Path,
    name: str,
    change: Callable[[dict[str, Any]], None],
    keep: Callable[[dict[str, Any]], bool] = lambda line: True,
) -> None:
    """Change each line of one of the dump's files (leaving out those not to `keep`) and give the manifest the
    file's new sha256, as a dump's author can: a sha256 is integrity, not authority."""
    path = folder / name
    lines = [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]
    lines = [line for line in lines if keep(line)]
    for line in lines:
        change(line)
    raw = gzip.compress("".join(json.dumps(line) + "\n" for line in lines).encode(), mtime=0)
    path.write_bytes(raw)
    entry = {"sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw), "lines": len(lines)}
    rewrite_manifest(folder, lambda manifest: manifest["files"].update({name: entry}))


def rewrite_reruns(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    rewrite_lines(folder, "reruns.jsonl.gz", change)


def levels() -> dict[str, str]:
    return dict(Run.objects.exclude(external_id__startswith="rerun/").values_list("run_id", "evidence"))


# Reruns numbered from 1, as the assertions name them (PostgreSQL's sequences outlive a rolled-back test).
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_a_rerun_whose_attestation_does_not_verify_is_left_out_with_its_result_and_evidence(
    decided: dict[str, Any], import_runs: ImportRuns, tmp_path: Path
) -> None:
    dump_into(tmp_path / "dump")
    results = set(RerunRequest.objects.exclude(result_run=None).values_list("result_run__run_id", flat=True))
    forget_everything()

    def forged(line: dict[str, Any]) -> None:
        if line["attestation"]:
            statement = json.loads(base64.b64decode(line["attestation"]["payload"]))
            statement["predicate"]["result"]["status"] = "PASSED"
            line["attestation"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()

    rewrite_reruns(tmp_path / "dump", forged)
    output = import_runs(tmp_path / "dump")
    for number in (1, 2):
        said = f"rerun #{number}, its result run and the evidence resting on it left out: its attestation does not"
        assert said in output and "the signature does not verify" in output
    assert "evidence.jsonl.gz line 1: run" in output and "which is left out" in output
    # Only the cancelled rerun, which decided nothing, is in; no result run, and no level moved.
    assert list(RerunRequest.objects.values_list("state", flat=True)) == ["cancelled"]
    assert results and not Run.objects.filter(run_id__in=results).exists()
    assert set(levels().values()) == {"reported"} and not EvidenceChange.objects.exists()


def test_a_rerun_result_no_attestation_vouches_for_is_left_out(
    decided: Any, import_runs: ImportRuns, tmp_path: Path
) -> None:
    dump_into(tmp_path / "dump")
    results = set(RerunRequest.objects.exclude(result_run=None).values_list("result_run__run_id", flat=True))
    forget_everything()
    rewrite_reruns(tmp_path / "dump", lambda line: line.update(attestation=None))
    output = import_runs(tmp_path / "dump")
    assert "a rerun's result that no attestation this site trusts vouches for: not imported" in output
    assert "it carries no attestation, so nothing vouches for its outcome" in output
    assert results and not Run.objects.filter(run_id__in=results).exists()
    # A verdict without its attestation is left out; the cancelled rerun claimed none.
    assert list(RerunRequest.objects.values_list("state", flat=True)) == ["cancelled"]
    assert set(levels().values()) == {"reported"}


def test_a_mirror_counts_attestations_by_the_keys_it_pinned_and_never_takes_them_for_its_own(
    decided: Any, import_runs: ImportRuns, tmp_path: Path, client: Client, settings: Any
) -> None:
    before = figures()
    (tmp_path / "workers.json").write_bytes(client.get("/api/v1/workers").content)
    dump_into(tmp_path / "kernelindex-2026-08-24")
    forget_everything()
    WorkerKey.objects.all().delete()
    # A mirror with no key pinned takes the dump's keys for nothing: every attested rerun is left out.
    unpinned = import_runs(tmp_path / "kernelindex-2026-08-24")
    assert "signed by a key the key set does not hold" in unpinned
    assert not RerunRequest.objects.exclude(state="cancelled").exists() and set(levels().values()) == {"reported"}

    forget_everything()
    import_runs(tmp_path / "kernelindex-2026-08-24", trust_workers=[tmp_path / "workers.json"])
    assert figures() == before
    (key,) = WorkerKey.objects.all()
    assert (key.name, key.registered_here) == (attested.WORKER, False)
    assert key.provenance == f"published by dump kernelindex-2026-08-24 of {settings.SITE_URL}"
    assert RerunRequest.objects.exclude(attestation=None).count() == 2
    assert client.get("/api/v1/workers").json()["workers"] == []
    # The key the dump's worker signs with (worker_identity finds it held, and registers nothing).
    message = worker_message(attested.worker_identity(), "beat", "tests:1", classes=["cpu"])
    assert WorkerKey.objects.count() == 1
    assert "no worker is registered with here" in (collect(message) or "")
