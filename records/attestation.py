"""Rerun attestations: an in-toto Statement v1 in a DSSE envelope, signed by a worker's ed25519 key.

Pure Python (the `cryptography` library, no Django), so that a GPU worker signs
with it and anyone verifies with it offline:

    python -m records.attestation verify attestation.json --keys workers.json

The Statement's subject is the original run's content digest and the digest
of the harness result the worker produced; its predicate
(`https://kernelindex.dev/rerun/v1`) carries the job, the worker, its
hardware class, the harness, the protocol, the environment, the per-case
results and the times. The site stores the envelope as it came and decides
the verdict from its predicate alone (records.rerun.measured_from_result).

A worker's other messages to the site (it started a job, it is alive, it
stops) travel in DSSE envelopes of their own payload type, signed alike.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from records.canonical import DIGEST_PREFIX, canonical_bytes, digest, parse_json

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://kernelindex.dev/rerun/v1"
STATEMENT_PAYLOAD_TYPE = "application/vnd.in-toto+json"
# A worker's own messages: it took a job, it is alive (and on which job), it stops.
MESSAGE_PAYLOAD_TYPE = "application/vnd.kernelindex.worker-message+json"
RUN_SUBJECT = "run"
RESULT_SUBJECT = "result"
MAX_ENVELOPE_BYTES = 4 << 20


class AttestationError(Exception):
    """An envelope that does not verify, or a statement that is not a rerun attestation; the message says why."""


# -- keys ----------------------------------------------------------------------------------


def new_private_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def private_key_text(key: Ed25519PrivateKey) -> str:
    """The private key as PEM (PKCS#8), the form a worker reads from its key file."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def load_private_key(text: str | bytes) -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key(text.encode() if isinstance(text, str) else text, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise AttestationError("the signing key is not an ed25519 key")
    return key


def public_key_text(key: Ed25519PublicKey) -> str:
    """The public key as the registry and /api/v1/workers publish it: its 32 raw bytes, base64."""
    return base64.b64encode(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)).decode()


def load_public_key(text: str) -> Ed25519PublicKey:
    try:
        raw = base64.b64decode(text, validate=True)
        return Ed25519PublicKey.from_public_bytes(raw)
    except (binascii.Error, ValueError) as error:
        raise AttestationError(f"not an ed25519 public key: {error}") from None


def key_id(public_key: str) -> str:
    """A key's id in signatures: the sha256 of its raw bytes, so a signature names the key it needs."""
    return DIGEST_PREFIX + hashlib.sha256(base64.b64decode(public_key)).hexdigest()


# -- DSSE ------------------------------------------------------------------------------------


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what is signed, the payload type bound to the payload."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def sign_envelope(payload_type: str, body: Mapping[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    payload = canonical_bytes(body)
    signature = key.sign(pae(payload_type, payload))
    return {
        "payloadType": payload_type,
        "payload": base64.b64encode(payload).decode(),
        "signatures": [
            {"keyid": key_id(public_key_text(key.public_key())), "sig": base64.b64encode(signature).decode()}
        ],
    }


@dataclass(frozen=True)
class Signed:
    """An envelope whose signature verified: the key that signed it and the payload it carries."""

    keyid: str
    payload_type: str
    body: dict[str, Any]


def envelope_keyid(envelope: Any) -> str:
    """The key id the envelope's one signature names (not yet checked)."""
    signatures = envelope.get("signatures") if isinstance(envelope, dict) else None
    if not isinstance(signatures, list) or len(signatures) != 1 or not isinstance(signatures[0], dict):
        raise AttestationError("an envelope carries exactly one signature")
    keyid = signatures[0].get("keyid")
    if not isinstance(keyid, str) or not keyid:
        raise AttestationError("the signature names no key")
    return keyid


def verify_envelope(envelope: Any, public_key: str) -> Signed:
    """Check the envelope's one signature with this key; its payload, parsed, if it holds."""
    keyid = envelope_keyid(envelope)
    if keyid != key_id(public_key):
        raise AttestationError("the signature names another key")
    payload_type = envelope.get("payloadType")
    if not isinstance(payload_type, str):
        raise AttestationError("the envelope has no payload type")
    try:
        payload = base64.b64decode(str(envelope.get("payload")), validate=True)
        signature = base64.b64decode(str(envelope["signatures"][0].get("sig")), validate=True)
    except binascii.Error:
        raise AttestationError("the payload or signature is not base64") from None
    try:
        load_public_key(public_key).verify(signature, pae(payload_type, payload))
    except InvalidSignature:
        raise AttestationError("the signature does not verify") from None
    try:
        body = parse_json(payload)
    except ValueError as error:
        raise AttestationError(f"the payload is not JSON: {error}") from None
    if not isinstance(body, dict):
        raise AttestationError("the payload is not a JSON object")
    return Signed(keyid, payload_type, body)


# -- the rerun statement ------------------------------------------------------------------------


def subject_digest(value: str) -> dict[str, str]:
    """A KernelIndex digest ("sha256:...") as in-toto spells a subject's digest."""
    if not value.startswith(DIGEST_PREFIX):
        raise AttestationError(f"not a sha256 digest: {value!r}")
    return {"sha256": value.removeprefix(DIGEST_PREFIX)}


def rerun_statement(
    *, run_digest: str, result: Mapping[str, Any] | None, predicate: Mapping[str, Any]
) -> dict[str, Any]:
    """The statement a worker signs: the run it reran and the result it got, and how (the predicate)."""
    subjects = [{"name": RUN_SUBJECT, "digest": subject_digest(run_digest)}]
    subjects.append({"name": RESULT_SUBJECT, "digest": subject_digest(digest(result))})
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": PREDICATE_TYPE,
        "predicate": dict(predicate),
    }


@dataclass(frozen=True)
class Attested:
    """A verified rerun attestation: who signed it, for which run and job, and the result it vouches for."""

    keyid: str
    run_digest: str
    result_digest: str
    predicate: dict[str, Any]

    @property
    def job_id(self) -> str:
        return str(self.predicate.get("jobId") or "")

    @property
    def worker(self) -> str:
        return str(self.predicate.get("worker") or "")

    @property
    def hardware_class(self) -> str:
        return str(self.predicate.get("hardwareClass") or "")

    @property
    def result(self) -> dict[str, Any] | None:
        result = self.predicate.get("result")
        return result if isinstance(result, dict) else None

    @property
    def confirmation(self) -> str | None:
        """The status of the second evaluation on fresh inputs, where one ran (harness.worker.confirm_failure)."""
        confirmation = self.predicate.get("confirmation")
        return str(confirmation["status"]) if isinstance(confirmation, dict) and confirmation.get("status") else None


def read_statement(signed: Signed) -> Attested:
    """A verified envelope's statement, checked to be a rerun attestation whose result matches its subject."""
    if signed.payload_type != STATEMENT_PAYLOAD_TYPE:
        raise AttestationError(f"payload type {signed.payload_type!r}, not an in-toto statement")
    statement = signed.body
    if statement.get("_type") != STATEMENT_TYPE or statement.get("predicateType") != PREDICATE_TYPE:
        raise AttestationError("not a KernelIndex rerun statement (in-toto Statement v1, predicate rerun/v1)")
    predicate = statement.get("predicate")
    subjects = statement.get("subject")
    if not isinstance(predicate, dict) or not isinstance(subjects, list):
        raise AttestationError("the statement has no predicate or no subject")
    named = {s.get("name"): s.get("digest") for s in subjects if isinstance(s, dict)}
    digests = {name: (value or {}).get("sha256") if isinstance(value, dict) else None for name, value in named.items()}
    if not isinstance(digests.get(RUN_SUBJECT), str) or not isinstance(digests.get(RESULT_SUBJECT), str):
        raise AttestationError("the subject names no run digest or no result digest")
    result_digest = DIGEST_PREFIX + str(digests[RESULT_SUBJECT])
    if digest(predicate.get("result")) != result_digest:
        raise AttestationError("the predicate's result is not the result the subject names")
    return Attested(signed.keyid, DIGEST_PREFIX + str(digests[RUN_SUBJECT]), result_digest, predicate)


# -- the published key set ------------------------------------------------------------------------


@dataclass(frozen=True)
class PublishedKey:
    """A worker's key as /api/v1/workers publishes it."""

    name: str
    classes: tuple[str, ...]
    public_key: str
    revoked_at: str | None


def read_key_set(value: Any) -> dict[str, PublishedKey]:
    """The key set (/api/v1/workers, or a dump's workers.json) by key id."""
    workers = value.get("workers") if isinstance(value, dict) else value
    if not isinstance(workers, list):
        raise AttestationError("a key set is a list of workers, or an object with one under 'workers'")
    keys = {}
    for worker in workers:
        key = PublishedKey(
            str(worker["name"]), tuple(worker.get("classes") or ()), str(worker["publicKey"]), worker.get("revokedAt")
        )
        keys[key_id(key.public_key)] = key
    return keys


def verify_with_key_set(envelope: Any, keys: Mapping[str, PublishedKey]) -> tuple[Attested, PublishedKey]:
    """Verify an attestation as anyone can: a key of the set, not revoked, of the attested worker and class."""
    key = keys.get(envelope_keyid(envelope))
    if key is None:
        raise AttestationError("signed by a key the key set does not hold")
    attested = read_statement(verify_envelope(envelope, key.public_key))
    if key.revoked_at is not None:
        raise AttestationError(f"signed by worker {key.name}'s key, revoked at {key.revoked_at}")
    if attested.worker != key.name:
        raise AttestationError(f"signed by worker {key.name}'s key but names worker {attested.worker!r}")
    if attested.hardware_class not in key.classes:
        raise AttestationError(f"worker {key.name} is not registered for class {attested.hardware_class!r}")
    return attested, key


def figures(attested: Attested) -> list[str]:
    """What an attestation says, line by line, for a person: its subject, its status and its figures."""
    result = attested.result or {}
    lines = [
        f"run {attested.predicate.get('run')} digest {attested.run_digest}",
        f"result digest {attested.result_digest}",
        f"job {attested.job_id} by worker {attested.worker} on {attested.hardware_class}",
        f"status {result.get('status') or attested.predicate.get('error') or 'none'}"
        + (f" (confirmed on fresh inputs: {attested.confirmation})" if attested.confirmation else ""),
    ]
    latency = result.get("latency") or {}
    if latency.get("median_ns"):
        lines.append(f"median latency {latency['median_ns']:.0f} ns, 95 % interval {latency.get('ci95_ns')}")
    for case in result.get("cases") or []:
        speedup = (case.get("speedup") or {}).get("median")
        lines.append(
            f"case {case.get('uuid')}: {case.get('status')}"
            + (f", speedup {speedup:.3g}x" if isinstance(speedup, (int, float)) else "")
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m records.attestation", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser("verify", help="check an attestation against a key set, offline")
    verify.add_argument("file", type=Path, help="a DSSE envelope (/reruns/<id>/attestation.json)")
    verify.add_argument("--keys", type=Path, required=True, help="the workers' keys (/api/v1/workers)")
    options = parser.parse_args(argv)
    try:
        envelope = json.loads(options.file.read_bytes()[:MAX_ENVELOPE_BYTES])
        attested, key = verify_with_key_set(envelope, read_key_set(json.loads(options.keys.read_bytes())))
    except (AttestationError, OSError, ValueError, KeyError, TypeError) as error:
        print(f"{options.file}: NOT verified: {error}", file=sys.stderr)
        return 1
    print(f"{options.file}: verified, signed by worker {key.name} ({key_id(key.public_key)})")
    for line in figures(attested):
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
