"""A dump carries evidence, not authority. Importing one counts a rerun's attestation only where it verifies
against a key this site trusts (its own registry, or keys pinned with `import_runs --trust-workers`), never
against the dump's own workers.jsonl.gz; its rerun and evidence lines are taken only as those attestations and
this site's rule decide them; and a key the dump lists is kept as what the dump said, never as this site's."""

from __future__ import annotations

import base64
import gzip
import io
import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from records.attestation import STATEMENT_PAYLOAD_TYPE, key_id, public_key_text, rerun_statement, sign_envelope
from runs.dump_sections import reset_sequence
from runs.models import Document, Run
from tests.conftest import ImportRuns
from tests.pages import visible_text
from tests.runs import attested, test_dump_evidence
from tests.runs.test_dump_evidence import (
    dump_into,
    figures,
    forget_everything,
    levels,
    rewrite_lines,
    rewrite_reruns,
)
from verification.models import EvidenceChange, RerunAttestation, RerunRequest, WorkerKey

# Reruns numbered from 1 in every test, as the lines below name them (PostgreSQL's sequences outlive a test's
# rolled-back transaction).
pytestmark = [pytest.mark.usefixtures("memory_broker"), pytest.mark.django_db(transaction=True, reset_sequences=True)]
# The dump tests' runs: one reproduced, one not reproduced, a rerun cancelled.
decided = test_dump_evidence.decided

DUMP = "kernelindex-2026-08-24"
# The forger's own key, which it lists in its dump under the real worker's name.
FORGER = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
FORGED_KEY = public_key_text(FORGER.public_key())


@pytest.fixture
def dump(decided: dict[str, Any], tmp_path: Path) -> Path:
    """The site's own dump of the decided runs: rerun #1 reproduced, #2 not reproduced (INCORRECT_NUMERICAL),
    #3 cancelled."""
    dump_into(tmp_path / DUMP)
    return tmp_path / DUMP


def resigned(
    envelope: dict[str, Any],
    key: Ed25519PrivateKey,
    change: Callable[[dict[str, Any]], None] = lambda predicate: None,
    *,
    result_run: bool = True,
) -> dict[str, Any]:
    """The envelope's statement with its predicate changed, its subject made to match, signed with this key."""
    statement = json.loads(base64.b64decode(envelope["payload"]))
    subjects = {subject["name"]: "sha256:" + subject["digest"]["sha256"] for subject in statement["subject"]}
    change(statement["predicate"])
    signed = rerun_statement(
        run_digest=subjects["run"],
        predicate=statement["predicate"],
        result_run_digest=subjects.get("resultRun") if result_run else None,
    )
    return sign_envelope(STATEMENT_PAYLOAD_TYPE, signed, key)


def ten_times_slower(predicate: dict[str, Any]) -> None:
    result = predicate["result"]
    for holder in [result, *result["cases"]]:
        latency = holder.get("latency") or {}
        for name, value in latency.items():
            if name.endswith("_ns"):
                latency[name] = [v * 10 for v in value] if isinstance(value, list) else value * 10


def forge(folder: Path, convicted_run: str) -> None:
    """What a forger does: its own key under the real worker's name in the dump's key list, rerun #1's figures
    ten times slower re-signed with it, and a verdict and an evidence line to match."""
    forged_key = {"name": attested.WORKER, "publicKey": FORGED_KEY, "keyId": key_id(FORGED_KEY)}
    rewrite_lines(folder, "workers.jsonl.gz", lambda line: line.update(forged_key))

    def slower(line: dict[str, Any]) -> None:
        if line["number"] == 1:
            line["attestation"] = resigned(line["attestation"], FORGER, ten_times_slower)
            line.update(verdict="not_reproduced", verdictReason="ten times slower than claimed")

    rewrite_reruns(folder, slower)
    rewrite_lines(folder, "evidence.jsonl.gz", lambda line: _convict(line) if line["run"] == convicted_run else None)


def _convict(line: dict[str, Any]) -> None:
    line["level"] = line["changes"][-1]["to"] = "not_reproduced"


def nothing_written(keys: int) -> bool:
    written = (Run, RerunRequest, RerunAttestation, EvidenceChange, Document)
    return not any(model.objects.exists() for model in written) and WorkerKey.objects.count() == keys


def verify_attestations(*pinned: Path) -> str:
    out = io.StringIO()
    try:
        call_command("verify_attestations", trust_workers=list(pinned), stdout=out)
    except CommandError as error:
        return out.getvalue() + str(error)
    return out.getvalue()


def test_a_forgers_key_under_a_real_workers_name_counts_for_nothing(
    decided: dict[str, Any], dump: Path, import_runs: ImportRuns, client: Client, settings: Any, tmp_path: Path
) -> None:
    registered = list(WorkerKey.objects.values_list("name", "key_id", "public_key", "revoked_at"))
    reproduced, failed = decided["reproduced"].run_id, decided["failed"].run_id
    forget_everything()
    forge(dump, reproduced)
    output = import_runs(dump)
    said = "rerun #1, its result run and the evidence resting on it left out: its attestation does not verify "
    assert said + "against a key this site trusts: signed by a key the key set does not hold" in output
    assert f"run {reproduced}'s evidence left out: it rests on rerun #1, which is left out" in output
    assert levels()[reproduced] == "reported" and not RerunRequest.objects.filter(run__run_id=reproduced).exists()
    assert not Run.objects.filter(external_id__startswith=f"rerun/{reproduced}/").exists()
    # Rerun #2, which this site's registered worker signed, counts as it did.
    assert levels()[failed] == "not_reproduced"
    # The forger's key is kept as what the dump said, beside the registered one, never as one of this site's.
    forged = WorkerKey.objects.get(key_id=key_id(FORGED_KEY))
    assert (forged.name, forged.registered_here) == (attested.WORKER, False)
    assert forged.provenance == f"published by dump {DUMP} of {settings.SITE_URL}"
    assert list(WorkerKey.objects.registered_here().values_list("name", "key_id", "public_key", "revoked_at")) == (
        registered
    )
    published = client.get("/api/v1/workers")
    assert [key["keyId"] for key in published.json()["workers"]] == [key for _, key, _, _ in registered]
    assert key_id(FORGED_KEY) not in published.content.decode()
    dump_into(tmp_path / "ours")
    ours = gzip.decompress((tmp_path / "ours" / "workers.jsonl.gz").read_bytes()).decode()
    assert key_id(FORGED_KEY) not in ours and registered[0][1] in ours
    assert "1 of 1 attestation(s) verified" in verify_attestations()


def test_verify_attestations_trusts_the_registry_and_pinned_keys_never_a_key_kept_from_a_dump(
    dump: Path, import_runs: ImportRuns, tmp_path: Path, settings: Any
) -> None:
    pinned = tmp_path / "workers.jsonl.gz"
    pinned.write_bytes((dump / "workers.jsonl.gz").read_bytes())  # the publisher's keys, fetched apart
    forget_everything()
    WorkerKey.objects.all().delete()
    import_runs(dump, trust_workers=[pinned])
    assert RerunAttestation.objects.count() == 2
    untrusted = (
        f"signed by a key this site does not trust (published by dump {DUMP} of {settings.SITE_URL}; not pinned)"
    )
    said = verify_attestations()
    assert f"0 of 2 attestation(s) verified; 2 did not: 2 {untrusted}" in said and "did not verify" in said
    assert "2 of 2 attestation(s) verified" in verify_attestations(pinned)
    # An attestation a forger's key signed, kept with its key as an import before this fix kept it: no key
    # stored from a dump vouches for it, whatever name it goes by.
    forged = WorkerKey.objects.create(
        name=attested.WORKER,
        hardware="cpu,nvidia-h100",
        public_key=FORGED_KEY,
        key_id=key_id(FORGED_KEY),
        created_at=RerunAttestation.objects.earliest("received_at").received_at,
        registered_here=False,
        published_by=f"dump {DUMP} of {settings.SITE_URL}",
    )
    stored = RerunAttestation.objects.earliest("pk")
    stored.envelope, stored.worker_key = resigned(stored.envelope, FORGER, ten_times_slower), forged
    stored.save()
    said = verify_attestations(pinned)
    assert f"1 of 2 attestation(s) verified; 1 did not: 1 {untrusted}" in said


@pytest.mark.parametrize(
    ("change", "field"),
    [
        # The attestation says INCORRECT_NUMERICAL; the line says the rerun passed and reproduced the claim.
        ({"state": "succeeded", "failureStatus": "", "failureReason": "", "verdict": "reproduced"}, "state"),
        ({"verdict": "reproduced", "verdictReason": "every case passed"}, "verdict"),
        ({"harnessSeconds": 5.0}, "harnessSeconds"),
        ({"run": "0123456789ab"}, "run"),
    ],
)
def test_a_rerun_line_that_says_other_than_its_attestation_refuses_the_dump(
    decided: dict[str, Any], dump: Path, import_runs: ImportRuns, change: dict[str, Any], field: str
) -> None:
    keys = WorkerKey.objects.count()
    forget_everything()
    rewrite_reruns(dump, lambda line: line.update(change) if line["number"] == 2 else None)
    failed = decided["failed"].run_id
    rewrite_lines(dump, "evidence.jsonl.gz", lambda line: _acquit(line) if line["run"] == failed else None)
    output = import_runs(dump, fails=True)
    assert f"reruns.jsonl.gz, line 2, field {field}: rerun #2 says" in output and "nothing from" in output
    assert nothing_written(keys)


def _acquit(line: dict[str, Any]) -> None:
    line["level"] = line["changes"][-1]["to"] = "reproduced"


def test_a_result_run_other_than_the_one_its_worker_signed_refuses_the_dump(
    dump: Path, import_runs: ImportRuns
) -> None:
    keys = WorkerKey.objects.count()
    forget_everything()

    def faster(line: dict[str, Any]) -> None:
        if "rerunOf" in line["run"]["spec"]:
            line["run"]["spec"]["observedAt"] = "2026-08-24T09:00:00Z"

    rewrite_lines(dump, "runs.jsonl.gz", faster)
    output = import_runs(dump, fails=True)
    assert "runs.jsonl.gz, line" in output and "field run: rerun #" in output and "but its worker signed" in output
    assert nothing_written(keys)


@pytest.mark.parametrize("case", ["level", "chain", "missing"])
def test_an_evidence_line_its_reruns_do_not_give_refuses_the_dump(
    decided: dict[str, Any], dump: Path, import_runs: ImportRuns, case: str
) -> None:
    keys = WorkerKey.objects.count()
    failed, reproduced = decided["failed"].run_id, decided["reproduced"].run_id
    forget_everything()
    if case == "level":  # the changes follow one another, to a level the rerun does not give
        rewrite_lines(dump, "evidence.jsonl.gz", lambda line: _acquit(line) if line["run"] == failed else None)
        said = "field level: reproduced, but the reruns whose attestations count give not_reproduced"
    elif case == "chain":
        rewrite_lines(dump, "evidence.jsonl.gz", lambda line: line["changes"][0].update({"from": "not_reproduced"}))
        said = "field changes.0.from: not_reproduced, but the level was reported then"
    else:  # a run the rule convicts, its line left out of the dump
        rewrite_lines(dump, "evidence.jsonl.gz", lambda line: None, keep=lambda line: line["run"] != failed)
        said = f"field run: run {failed} has no line, but the reruns whose attestations count give not_reproduced"
    output = import_runs(dump, fails=True)
    assert "evidence.jsonl.gz" in output and said in output, output
    assert nothing_written(keys) and reproduced


@pytest.mark.parametrize(("revoked", "counted"), [(-timedelta(seconds=1), False), (timedelta(hours=1), True)])
def test_a_key_revoked_before_the_attestation_was_recorded_counts_for_nothing(
    dump: Path, import_runs: ImportRuns, revoked: timedelta, counted: bool
) -> None:
    recorded = RerunAttestation.objects.earliest("received_at").received_at
    forget_everything()
    WorkerKey.objects.update(revoked_at=recorded + revoked)
    output = import_runs(dump)
    assert RerunAttestation.objects.count() == (2 if counted else 0)
    assert (f"signed by worker {attested.WORKER}'s key, revoked at" in output) is not counted
    assert set(levels().values()) == ({"reproduced", "not_reproduced", "reported"} if counted else {"reported"})


def test_a_dump_naming_a_registered_key_otherwise_neither_renames_nor_shadows_it(
    dump: Path, import_runs: ImportRuns, client: Client
) -> None:
    registered = list(WorkerKey.objects.values_list("pk", "name", "key_id", "registered_here"))
    forget_everything()
    rewrite_lines(dump, "workers.jsonl.gz", lambda line: line.update(name="someone-else", classes=["nvidia-b200"]))
    import_runs(dump)
    assert list(WorkerKey.objects.values_list("pk", "name", "key_id", "registered_here")) == registered
    assert RerunAttestation.objects.filter(worker_key__registered_here=True).count() == 2
    assert [key["name"] for key in client.get("/api/v1/workers").json()["workers"]] == [attested.WORKER]


def test_a_key_pinned_for_the_publisher_counts_even_where_the_dump_lists_none(
    dump: Path, import_runs: ImportRuns, client: Client, tmp_path: Path, settings: Any
) -> None:
    (tmp_path / "workers.json").write_bytes(client.get("/api/v1/workers").content)
    before = figures()
    forget_everything()
    WorkerKey.objects.all().delete()
    rewrite_lines(dump, "workers.jsonl.gz", lambda line: None, keep=lambda line: False)
    import_runs(dump, trust_workers=[tmp_path / "workers.json"])
    assert figures() == before
    (key,) = WorkerKey.objects.all()
    assert (key.registered_here, key.provenance) == (False, f"published by dump {DUMP} of {settings.SITE_URL}")
    assert client.get("/api/v1/workers").json()["workers"] == []


def test_the_sites_own_dump_round_trips_every_rerun_and_evidence_line_with_its_keys_pinned(
    dump: Path, import_runs: ImportRuns, tmp_path: Path
) -> None:
    pinned = tmp_path / "workers.jsonl.gz"
    pinned.write_bytes((dump / "workers.jsonl.gz").read_bytes())
    before = figures()
    forget_everything()
    WorkerKey.objects.all().delete()
    reset_sequence(RerunRequest)  # numbered from 1 again, as in a new database
    output = import_runs(dump, trust_workers=[pinned])
    assert "left out" not in output and "skipped" not in output
    assert figures() == before
    again = dump_into(tmp_path / "again")
    for name in ("reruns.jsonl.gz", "evidence.jsonl.gz"):
        assert again[name] == (dump / name).read_bytes(), name
    # The mirror vouches for no key of the publisher's: its own dump lists its own workers, none.
    assert gzip.decompress(again["workers.jsonl.gz"]) == b""


def test_an_attestation_signed_before_result_runs_were_covers_the_result_its_line_names(
    decided: dict[str, Any], dump: Path, import_runs: ImportRuns
) -> None:
    before = figures()
    forget_everything()
    key = attested.worker_identity().key  # the site's own worker signs as it did before
    rewrite_reruns(dump, lambda line: _unsigned_result_run(line, key))
    import_runs(dump)
    assert figures() == before
    assert RerunRequest.objects.exclude(result_run=None).count() == 2


def _unsigned_result_run(line: dict[str, Any], key: Ed25519PrivateKey) -> None:
    if line["attestation"]:
        line["attestation"] = resigned(line["attestation"], key, result_run=False)


def test_a_line_decided_under_another_rule_is_decided_again_under_this_sites(
    decided: dict[str, Any], dump: Path, import_runs: ImportRuns
) -> None:
    reproduced = decided["reproduced"].run_id
    forget_everything()
    old = {"ruleVersion": 5, "verdict": "not_reproduced", "verdictReason": "as rule 5 read it"}
    rewrite_reruns(dump, lambda line: line.update(old) if line["number"] == 1 else None)
    rewrite_lines(dump, "evidence.jsonl.gz", lambda line: _convict_under_5(line) if line["run"] == reproduced else None)
    import_runs(dump)
    rerun = RerunRequest.objects.get(pk=1)
    assert (rerun.verdict, rerun.rule_version) == ("reproduced", decided["reruns"][0].rule_version)
    assert levels()[reproduced] == "reproduced"
    history = EvidenceChange.objects.filter(run__run_id=reproduced).order_by("changed_at")
    assert [(c.evidence, c.rule_version) for c in history] == [
        ("not_reproduced", 5),
        ("reproduced", rerun.rule_version),
    ]


def _convict_under_5(line: dict[str, Any]) -> None:
    _convict(line)
    line["changes"][-1]["ruleVersion"] = 5


def test_trust_workers_names_a_key_set_and_a_dump_to_pin_it_for(
    dump: Path, import_runs: ImportRuns, tmp_path: Path, sample: Path
) -> None:
    (tmp_path / "keys.json").write_text('{"workers": [{"name": "x"}]}')
    assert "--trust-workers" in import_runs(dump, trust_workers=[tmp_path / "keys.json"], fails=True)
    assert "not a key set" in import_runs(dump, trust_workers=[tmp_path / "keys.json"], fails=True)
    pinned = dump / "workers.jsonl.gz"
    said = import_runs(sample / "kernelbench", trust_workers=[pinned], fails=True)
    assert "no dump is among the paths" in said


def test_a_key_kept_from_a_dump_is_shown_as_published_by_it_wherever_keys_are_shown(
    decided: dict[str, Any], dump: Path, import_runs: ImportRuns, client: Client, settings: Any
) -> None:
    settings.PAGE_CACHE_SECONDS = 0
    pinned = dump.parent / "pinned.jsonl.gz"
    pinned.write_bytes((dump / "workers.jsonl.gz").read_bytes())
    forget_everything()
    WorkerKey.objects.all().delete()
    import_runs(dump, trust_workers=[pinned])
    published = f"published by dump {DUMP} of {settings.SITE_URL}"
    page = visible_text(client.get(f"/runs/{decided['reproduced'].run_id}").content)
    assert f"signed by worker {attested.WORKER} (in-toto, DSSE; a key {published}, not one of this site's" in page
    listed = io.StringIO()
    call_command("worker_key", "list", stdout=listed)
    assert f"{published}: not one of this site's workers" in listed.getvalue()
    client.force_login(User.objects.create_superuser("admin", password="x"))
    assert published in visible_text(client.get("/admin/verification/workerkey/").content)
