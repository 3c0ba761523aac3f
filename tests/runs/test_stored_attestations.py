"""A stored attestation is verified again on every read of its figures, and what a worker signed is what the site
stores: an envelope edited in the database moves nothing and is shown as such, and a real rerun's attestation
verifies offline, with this checkout's verifier and with a third party's (securesystemslib), against the result
run's JSON twin."""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey

from records.canonical import canonical_bytes
from runs.models import Run
from tests.pages import visible_text
from tests.results import harness_result
from tests.runs.attested import WORKER, finish, rerun_here
from tests.runs.conftest import ROOT
from verification.models import RerunAttestation, RerunRequest
from verification.reruns import request_rerun
from verification.worker_keys import revoke_worker_key
from web.cache import bump_generation

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("memory_broker")]


def decided(demo: Callable[[str], Run], times: float) -> RerunRequest:
    """The too-fast demo run, rerun by the tests' worker with a result this many times its reported latency."""
    run = demo("rmsnorm-row-loop")
    median = (run.latency_ns or 1.0) * times
    result = harness_result(median=median, interval=(median * 0.95, median * 1.05))
    return finish(request_rerun(run, user=None), result)


def edit_payload(attestation: RerunAttestation, change: Callable[[dict[str, Any]], None]) -> None:
    """What someone with the database could do: change the signed payload, keep the signature."""
    envelope = dict(attestation.envelope)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    change(statement)
    envelope["payload"] = base64.b64encode(canonical_bytes(statement)).decode()
    RerunAttestation.objects.filter(pk=attestation.pk).update(envelope=envelope)


def test_reevaluate_on_an_envelope_edited_in_the_database_moves_nothing(demo: Callable[[str], Run]) -> None:
    request = decided(demo, times=20)  # far slower than claimed: not reproduced
    run = request.run
    run.refresh_from_db()
    assert (request.verdict, run.evidence) == ("not_reproduced", "not_reproduced")
    assert request.attestation is not None

    def reproducing(statement: dict[str, Any]) -> None:
        statement["predicate"]["result"] = harness_result(median=run.latency_ns or 1.0)

    edit_payload(request.attestation, reproducing)
    out, err = io.StringIO(), io.StringIO()
    call_command("reevaluate", run.run_id, stdout=out, stderr=err)
    request.refresh_from_db()
    run.refresh_from_db()
    assert (request.verdict, run.evidence) == ("not_reproduced", "not_reproduced"), out.getvalue()
    assert "1 rerun(s) whose stored attestation no longer verifies" in err.getvalue()
    assert "0 verdict(s) changed, 0 evidence level(s) moved" in out.getvalue()


def test_a_page_shows_an_attestation_that_no_longer_verifies_and_none_of_its_figures(
    demo: Callable[[str], Run], client: Client
) -> None:
    request = decided(demo, times=20)
    run = request.run
    page = client.get(run.get_absolute_url())
    assert "verified by this site on this page, result run included" in visible_text(page.content)
    twin = client.get(f"/runs/{run.run_id}.json").json()["reruns"][0]
    assert twin["attestationVerified"] is True and twin["latencyNs"]["median"] == 20 * (run.latency_ns or 1.0)
    assert request.attestation is not None

    edit_payload(request.attestation, lambda statement: statement["predicate"].update(harnessSeconds=0.01))
    bump_generation()  # an edit behind the site's back retires no cached page: the next render shows it
    text = visible_text(client.get(run.get_absolute_url()).content)
    assert "its stored attestation no longer verifies" in text and "verified by this site" not in text
    twin = client.get(f"/runs/{run.run_id}.json").json()["reruns"][0]
    assert (twin["attestationVerified"], twin["latencyNs"], twin["countsForEvidence"]) == (False, None, False)
    api = client.get(f"/api/v1/reruns/{request.pk}").json()
    assert api["attestationVerified"] is False


def verify(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """`python -m records.attestation verify` with this checkout's code and nothing of the site's."""
    command = [sys.executable, "-m", "records.attestation", "verify", "attestation.json", "--keys", "workers.json"]
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT)}
    return subprocess.run([*command, *options], cwd=folder, env=environment, capture_output=True, text=True, timeout=60)


def third_party_verifies(envelope: dict[str, Any], workers: dict[str, Any]) -> bool:
    """securesystemslib's DSSE verifier, with the keys /api/v1/workers publishes."""
    keys = [
        SSlibKey(key["keyId"], "ed25519", "ed25519", {"public": base64.b64decode(key["publicKey"]).hex()})
        for key in workers["workers"]
    ]
    try:
        Envelope.from_dict(json.loads(json.dumps(envelope))).verify(keys, 1)
    except VerificationError:
        return False
    return True


def test_a_real_reruns_attestation_verifies_offline_against_its_result_runs_twin(
    demo: Callable[[str], Run], client: Client, tmp_path: Path, settings: Any
) -> None:
    # One attempt, whatever the verdict: this is about what is signed, not about the host's noise.
    settings.RERUN_MAX_ATTEMPTS = 1
    request = rerun_here(request_rerun(demo("rmsnorm-vectorised"), user=None))
    assert request.state == "succeeded" and request.result_run is not None, request.log_tail
    envelope = client.get(f"/reruns/{request.pk}/attestation.json").json()
    workers = client.get("/api/v1/workers").json()
    twin = client.get(f"/runs/{request.result_run.run_id}.json").json()
    (tmp_path / "attestation.json").write_text(json.dumps(envelope))
    (tmp_path / "workers.json").write_text(json.dumps(workers))
    (tmp_path / "twin.json").write_text(json.dumps(twin))

    done = verify(tmp_path, "--run", "twin.json")
    assert done.returncode == 0, done.stderr
    assert f"twin.json is the result run the worker signed ({twin['run']['metadata']['name']}" in done.stdout
    assert third_party_verifies(envelope, workers)

    # A twin whose run says anything else than what was signed (here only when it was observed) is not it.
    twin["run"]["spec"]["observedAt"] = "2020-01-01T00:00:00Z"
    (tmp_path / "forged-twin.json").write_text(json.dumps(twin))
    refused = verify(tmp_path, "--run", "forged-twin.json")
    assert refused.returncode == 1 and "not the result run" in refused.stderr
    forged = dict(envelope, payload=base64.b64encode(b'{"_type": "x"}').decode())
    assert not third_party_verifies(forged, workers)

    # The worker's key revoked afterwards: the site keeps what it took in before, and so does the verifier,
    # given when the site recorded it (as the rerun's JSON says), and saying so.
    recorded_at = client.get(f"/api/v1/reruns/{request.pk}").json()["attestationRecordedAt"]
    assert revoke_worker_key(WORKER)
    (tmp_path / "workers.json").write_text(client.get("/api/v1/workers").content.decode())
    assert verify(tmp_path).returncode == 1
    later = verify(tmp_path, "--recorded-at", recorded_at, "--run", "twin.json")
    assert later.returncode == 0, later.stderr
    assert "revoked at" in later.stdout and "after the site recorded this attestation" in later.stdout


def test_the_sites_dump_carries_no_attestation_that_no_longer_verifies(
    demo: Callable[[str], Run], tmp_path: Path
) -> None:
    request = decided(demo, times=20)
    assert request.attestation is not None

    def dumped_line() -> dict[str, Any]:
        folder = tmp_path / f"dump-{len(list(tmp_path.iterdir()))}"
        call_command("dump", out=folder, stdout=io.StringIO())
        lines = gzip.decompress((folder / "reruns.jsonl.gz").read_bytes()).splitlines()
        (line,) = [json.loads(line) for line in lines if json.loads(line)["number"] == request.pk]
        return line

    assert dumped_line()["attestation"] == request.attestation.envelope
    edit_payload(request.attestation, lambda statement: statement["predicate"].update(harnessSeconds=0.01))
    # Dumped without it: a mirror leaves an unattested rerun out, as this site's own pages no longer count it.
    line = dumped_line()
    assert (line["attestation"], line["attestationRecordedAt"]) == (None, None)
