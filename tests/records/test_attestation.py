"""Rerun attestations as anyone checks them offline: DSSE over an in-toto statement, ed25519, a key set."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from records.attestation import (
    STATEMENT_PAYLOAD_TYPE,
    AttestationError,
    key_file_text,
    key_id,
    key_set,
    new_private_key,
    public_key_text,
    read_key_file,
    rerun_statement,
    sign_envelope,
    verify_with_key_set,
)
from records.worker_protocol import RerunJob

ROOT = Path(__file__).resolve().parent.parent.parent
RUN_DIGEST = "sha256:" + "3" * 64


def predicate(**changes: Any) -> dict[str, Any]:
    return {
        "jobId": "0" * 32,
        "request": 7,
        "run": "0123456789ab",
        "worker": "gpu-1",
        "hardwareClass": "cpu",
        "workloadDigest": "sha256:" + "1" * 64,
        "implementationDigest": "sha256:" + "2" * 64,
        "harnessOptions": {"device": "cpu", "protocol": "kernelindex", "timeout": 600},
        "result": {
            "status": "PASSED",
            "latency": {"median_ns": 1234.0, "ci95_ns": [1200.0, 1300.0]},
            "cases": [{"uuid": "c1", "status": "PASSED", "speedup": {"median": 2.5}}],
            "harness": {"name": "kernelindex-harness", "version": "0.1.0", "digest": "sha256:" + "a" * 64},
        },
        "startedAt": "2026-08-24T10:00:00Z",
        "finishedAt": "2026-08-24T10:00:09Z",
        "harnessSeconds": 9.0,
    } | changes


@pytest.fixture
def worker() -> tuple[Any, dict[str, Any]]:
    """A worker's key, and the key set that publishes it."""
    key = new_private_key()
    public = public_key_text(key.public_key())
    published = {
        "name": "gpu-1",
        "classes": ["cpu"],
        "publicKey": public,
        "keyId": key_id(public),
        "createdAt": "2026-08-01T00:00:00Z",
        "revokedAt": None,
    }
    return key, published


def signed(key: Any, **changes: Any) -> dict[str, Any]:
    return sign_envelope(
        STATEMENT_PAYLOAD_TYPE, rerun_statement(run_digest=RUN_DIGEST, predicate=predicate(**changes)), key
    )


def test_an_attestation_verifies_against_the_published_key(worker: tuple[Any, dict[str, Any]]) -> None:
    key, published = worker
    attested, found = verify_with_key_set(signed(key), key_set([published]))
    assert (attested.run_digest, attested.job_id, attested.worker, found.name) == (
        RUN_DIGEST,
        "0" * 32,
        "gpu-1",
        "gpu-1",
    )
    statement = json.loads(base64.b64decode(signed(key)["payload"]))
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://kernelindex.dev/rerun/v1"
    assert [subject["name"] for subject in statement["subject"]] == ["run", "result"]


@pytest.mark.parametrize(
    ("tamper", "why"),
    [
        (lambda e: e.update(payload=base64.b64encode(b'{"x": 1}').decode()), "the signature does not verify"),
        (lambda e: e["signatures"][0].update(sig=base64.b64encode(b"x" * 64).decode()), "does not verify"),
        (lambda e: e["signatures"][0].update(keyid="sha256:" + "9" * 64), "does not hold"),
        (lambda e: e.update(payloadType="application/json"), "does not verify"),
        (lambda e: e["signatures"].append(dict(e["signatures"][0])), "one signature"),
    ],
)
def test_a_tampered_envelope_does_not_verify(worker: tuple[Any, dict[str, Any]], tamper: Any, why: str) -> None:
    key, published = worker
    envelope = signed(key)
    tamper(envelope)
    with pytest.raises(AttestationError, match=why):
        verify_with_key_set(envelope, key_set([published]))


def test_the_key_must_be_the_workers_unrevoked_and_registered_for_the_class(worker: tuple[Any, dict[str, Any]]) -> None:
    key, published = worker
    with pytest.raises(AttestationError, match="names worker 'gpu-2'"):
        verify_with_key_set(signed(key, worker="gpu-2"), key_set([published]))
    with pytest.raises(AttestationError, match="not registered for class 'nvidia-h100'"):
        verify_with_key_set(signed(key, hardwareClass="nvidia-h100"), key_set([published]))
    revoked = published | {"revokedAt": "2026-08-20T00:00:00Z"}
    with pytest.raises(AttestationError, match="revoked at"):
        verify_with_key_set(signed(key), key_set([revoked]))
    with pytest.raises(AttestationError, match="keyId is not the sha256"):
        key_set([published | {"keyId": "sha256:" + "0" * 64}])


def test_a_signed_statement_whose_result_is_not_its_subject_is_refused(worker: tuple[Any, dict[str, Any]]) -> None:
    key, published = worker
    statement = rerun_statement(run_digest=RUN_DIGEST, predicate=predicate())
    statement["predicate"]["result"]["latency"]["median_ns"] = 1.0
    with pytest.raises(AttestationError, match="not the result its subject names"):
        verify_with_key_set(sign_envelope(STATEMENT_PAYLOAD_TYPE, statement, key), key_set([published]))


def test_a_key_file_holds_the_name_the_classes_and_the_key() -> None:
    key = new_private_key()
    site = public_key_text(new_private_key().public_key())
    identity = read_key_file(key_file_text("gpu-1", ["cpu", "nvidia-h100"], key, site))
    assert (identity.name, identity.classes, identity.site_key) == ("gpu-1", ("cpu", "nvidia-h100"), site)
    assert identity.key_id == key_id(public_key_text(key.public_key()))
    with pytest.raises(AttestationError, match="not a KernelIndex worker key file"):
        read_key_file("-----BEGIN PRIVATE KEY-----\n")


@pytest.mark.parametrize(
    ("harness", "why"),
    [
        ({"unsandboxed": True}, "not one a job may set"),
        ({"json": "/etc/passwd"}, "not one a job may set"),
        ({"protocol": "--unsandboxed"}, "not a plain value"),
        ({"protocol": "a b"}, "not a plain value"),
        ({"timeout": True}, "is not a int or float"),
        ({"memory-mb": "4096"}, "is not a int"),
    ],
)
def test_a_job_sets_only_the_harness_options_it_may(harness: dict[str, Any], why: str) -> None:
    job = {
        "jobId": "0" * 32,
        "request": 1,
        "run": "0123456789ab",
        "runDigest": RUN_DIGEST,
        "definition": "d",
        "hardwareClass": "cpu",
        "workload": {},
        "implementation": {},
        "harness": {"device": "cpu"},
        "sentAt": "2026-08-24T10:00:00Z",
    }
    assert RerunJob.model_validate(job).harness == {"device": "cpu"}
    with pytest.raises(ValueError, match=why):
        RerunJob.model_validate(job | {"harness": harness})


def test_the_command_line_verifies_offline_without_django(worker: tuple[Any, dict[str, Any]], tmp_path: Path) -> None:
    key, published = worker
    (tmp_path / "attestation.json").write_text(json.dumps(signed(key)))
    (tmp_path / "workers.json").write_text(json.dumps({"workers": [published]}))
    with gzip.open(tmp_path / "workers.jsonl.gz", "wt") as lines:
        lines.write(json.dumps(published) + "\n")
    # Nothing of the site: no settings, no database, only this checkout's modules.
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT)}
    for keys in ("workers.json", "workers.jsonl.gz"):
        verify = [sys.executable, "-m", "records.attestation", "verify", "attestation.json", "--keys", keys]
        done = subprocess.run(verify, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "verified: signed by worker gpu-1" in done.stdout
        assert f"run 0123456789ab (digest {RUN_DIGEST}), rerun #7" in done.stdout
        assert "median latency 1234 ns" in done.stdout and "case c1: PASSED, 2.5x the reference" in done.stdout
    (tmp_path / "attestation.json").write_text(json.dumps(signed(new_private_key())))
    refused = subprocess.run(verify, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "NOT verified: signed by a key the key set does not hold" in refused.stderr


def test_the_worker_and_the_verifier_import_no_django() -> None:
    """As on a GPU host, where Django is not installed (kombu looks for it, and does without)."""
    code = (
        "import sys; sys.modules['django'] = None\n"
        "import harness.worker, records.attestation, records.worker_protocol\n"
        "site = {'kernelindex', 'runs', 'django'}\n"
        "print(sorted(m for m, loaded in sys.modules.items() if loaded and m.split('.')[0] in site))"
    )
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr
