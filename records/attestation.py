"""Rerun attestations: what a rerun worker signs, and how anyone checks it, without the web app.

A rerun worker (harness/parent/worker.py) holds no database. What it tells the site it
signs with its ed25519 key (through `cryptography`), in a DSSE envelope
(https://github.com/secure-systems-lab/dsse). Its result is an in-toto
Statement v1 (https://github.com/in-toto/attestation) of predicate type
`https://kernelindex.dev/rerun/v1`:

- subject: the original run (its content digest), the harness's result (the
  digest of its RFC 8785 form) and, where the harness wrote a result, the run
  the site stores for it (the content digest of the result run document the
  worker made from it: records.rerun.rerun_manifest), so that what the pages
  show, rank and dump is exactly what was signed;
- predicate: the job and request it answers, the worker's registered name and
  hardware class, the digests of the definition and solution it ran, the
  harness options, the harness's result as the harness wrote it (harness name,
  version and digest, protocol, environment, per-case results), the status of
  a second evaluation on fresh inputs where one ran, and the times.

The site's collector (verification/collector.py) verifies it against the worker
registry; the site publishes each envelope at /reruns/<id>/attestation.json
and the keys at /api/v1/workers, and anyone verifies offline:

    python -m records.attestation verify attestation.json --keys workers.json
"""

from __future__ import annotations

import argparse
import base64
import binascii
import gzip
import hashlib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from records.canonical import DIGEST_PREFIX, canonical_bytes, digest, is_digest
from records.limits import LimitError, parse_limited
from records.schema import REFERENCE_FIELDS, parse_timestamp

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://kernelindex.dev/rerun/v1"
STATEMENT_PAYLOAD_TYPE = "application/vnd.in-toto+json"
# A worker's own messages to the site: it took a job, it is alive, it stops, here is its result.
MESSAGE_PAYLOAD_TYPE = "application/vnd.kernelindex.worker-message+json"
# A job the site sends a worker, signed with the site's own key (records.worker_protocol.sign_job).
JOB_PAYLOAD_TYPE = "application/vnd.kernelindex.rerun-job+json"
RUN_SUBJECT = "run"
RESULT_SUBJECT = "result"
RESULT_RUN_SUBJECT = "resultRun"
# An attestation carries a harness result: kilobytes for the demo, far less than this for any real one.
MAX_ENVELOPE_BYTES = 4 << 20
# Hundreds of bytes a key: a key set of this size would name tens of thousands of workers.
MAX_KEY_SET_BYTES = 4 << 20
JOB_ID_PATTERN = r"^[0-9a-f]{32}$"
# A worker's registered name: what its key file, its messages and the published key set call it.
WORKER_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
KEY_FILE_NAME_LINE = "# KernelIndex rerun worker: "
KEY_FILE_CLASSES_LINE = "# classes: "
# The site's public key, with which the worker checks every job it is sent (records.worker_protocol).
KEY_FILE_SITE_LINE = "# site key: "


class AttestationError(Exception):
    """An envelope that does not verify, or a statement that is not a rerun attestation; the message says why."""


class _Closed(BaseModel):
    """A JSON value from elsewhere: every field typed strictly, no field it does not name."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# -- keys ----------------------------------------------------------------------------------


def new_private_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def private_key_pem(key: Ed25519PrivateKey) -> str:
    """The private key as PEM (PKCS#8), the form a worker's key file holds."""
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return pem.decode()


def load_private_key(text: str) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(text.encode(), password=None)
    except (ValueError, TypeError) as error:
        raise AttestationError(f"not a private key in PEM: {error}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise AttestationError("the signing key is not an ed25519 key")
    return key


def public_key_text(key: Ed25519PublicKey) -> str:
    """A public key as the registry and /api/v1/workers publish it: its 32 raw bytes, base64."""
    return base64.b64encode(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)).decode()


def load_public_key(text: str) -> Ed25519PublicKey:
    try:
        return Ed25519PublicKey.from_public_bytes(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError) as error:
        raise AttestationError(f"not an ed25519 public key (32 bytes, base64): {error}") from None


def key_id(public_key: str) -> str:
    """A key's id in signatures: the sha256 of its raw bytes, so that a signature names the key it needs."""
    return DIGEST_PREFIX + hashlib.sha256(load_public_key(public_key).public_bytes_raw()).hexdigest()


@dataclass(frozen=True)
class WorkerIdentity:
    """Who a worker is: its registered name and classes, and the key it signs with (its key file)."""

    name: str
    classes: tuple[str, ...]
    key: Ed25519PrivateKey
    # The site's public key (base64), which signs the jobs this worker runs; None in a key file made before
    # jobs were signed, which the worker no longer runs with.
    site_key: str | None = None

    @property
    def key_id(self) -> str:
        return key_id(public_key_text(self.key.public_key()))


def key_file_text(name: str, classes: Sequence[str], key: Ed25519PrivateKey, site_key: str) -> str:
    """A worker's key file: its name and classes (for people and for the worker), the site's public key (which
    signs its jobs), then the private key."""
    header = f"{KEY_FILE_NAME_LINE}{name}\n{KEY_FILE_CLASSES_LINE}{','.join(classes)}\n{KEY_FILE_SITE_LINE}{site_key}\n"
    return header + private_key_pem(key)


def read_key_file(text: str) -> WorkerIdentity:
    lines = text.splitlines()
    names = _header(lines, KEY_FILE_NAME_LINE)
    classes = _header(lines, KEY_FILE_CLASSES_LINE)
    sites = _header(lines, KEY_FILE_SITE_LINE)
    if len(names) != 1 or len(classes) != 1 or len(sites) > 1 or "-----BEGIN" not in text:
        raise AttestationError("not a KernelIndex worker key file (manage.py worker_key create makes one)")
    if sites:
        load_public_key(sites[0])
    hardware = tuple(name for name in classes[0].split(",") if name)
    private = load_private_key(text[text.index("-----BEGIN") :])
    return WorkerIdentity(names[0], hardware, private, sites[0] if sites else None)


def _header(lines: Sequence[str], prefix: str) -> list[str]:
    return [line.removeprefix(prefix).strip() for line in lines if line.startswith(prefix)]


# -- DSSE ------------------------------------------------------------------------------------


class EnvelopeSignature(_Closed):
    keyid: str = Field(min_length=1, max_length=100)
    sig: str = Field(min_length=1, max_length=200)


class Envelope(_Closed):
    """A DSSE envelope with exactly one signature (a worker signs alone)."""

    payloadType: str = Field(max_length=200)  # noqa: N815 (DSSE's spelling)
    payload: str = Field(max_length=MAX_ENVELOPE_BYTES)
    signatures: list[EnvelopeSignature] = Field(min_length=1, max_length=1)


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


def read_envelope(value: Any) -> Envelope:
    """An envelope's shape checked, its signature not yet."""
    try:
        return Envelope.model_validate(value)
    except ValidationError as error:
        raise AttestationError(f"not a DSSE envelope with one signature: {_first_problem(error)}") from None


def verify_envelope(envelope: Envelope, public_key: str) -> dict[str, Any]:
    """Check the envelope's signature with this key; its payload, parsed within the import limits, if it holds."""
    if envelope.signatures[0].keyid != key_id(public_key):
        raise AttestationError("the signature names another key")
    try:
        payload = base64.b64decode(envelope.payload, validate=True)
        signature = base64.b64decode(envelope.signatures[0].sig, validate=True)
    except binascii.Error:
        raise AttestationError("the payload or the signature is not base64") from None
    try:
        load_public_key(public_key).verify(signature, pae(envelope.payloadType, payload))
    except InvalidSignature:
        raise AttestationError("the signature does not verify") from None
    try:
        body = parse_limited(payload)
    except (ValueError, LimitError) as error:
        raise AttestationError(f"the payload is not JSON within the limits: {error}") from None
    if not isinstance(body, dict):
        raise AttestationError("the payload is not a JSON object")
    return body


# -- the rerun statement ------------------------------------------------------------------------


class RerunPredicate(_Closed):
    """What a worker attests of one job (predicate type PREDICATE_TYPE)."""

    jobId: str = Field(pattern=JOB_ID_PATTERN)  # noqa: N815 (the JSON's spelling)
    request: int = Field(ge=1)
    run: str = Field(min_length=1, max_length=16)
    worker: str = Field(pattern=WORKER_NAME_PATTERN)
    hardwareClass: str = Field(max_length=64)  # noqa: N815
    # What the worker ran: the digests of the Workload and Implementation documents the job carried.
    workloadDigest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")  # noqa: N815
    implementationDigest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")  # noqa: N815
    harnessOptions: dict[str, str | int | float | bool]  # noqa: N815
    # The harness's own JSON result (harness/parent/results.py), as it wrote it; None when it wrote none.
    result: dict[str, Any] | None
    startedAt: str  # noqa: N815
    finishedAt: str  # noqa: N815
    harnessSeconds: float = Field(ge=0)  # noqa: N815


class Subject(_Closed):
    name: str
    digest: dict[str, str]


class Statement(_Closed):
    type: Literal["https://in-toto.io/Statement/v1"] = Field(alias="_type")
    # The run and the result; and the result run where the harness wrote a result (statements made before it
    # was signed have two).
    subject: list[Subject] = Field(min_length=2, max_length=3)
    predicateType: Literal["https://kernelindex.dev/rerun/v1"]  # noqa: N815
    predicate: RerunPredicate


def subject_digest(value: str) -> dict[str, str]:
    """A KernelIndex digest ("sha256:...") as in-toto spells a subject's digest."""
    if not is_digest(value):
        raise AttestationError(f"not a sha256 digest: {value!r}")
    return {"sha256": value.removeprefix(DIGEST_PREFIX)}


def rerun_statement(
    *, run_digest: str, predicate: Mapping[str, Any], result_run_digest: str | None = None
) -> dict[str, Any]:
    """The statement a worker signs: the run it reran, the result it got and the run the site stores for that
    result (the subject), and how."""
    subjects = [
        {"name": RUN_SUBJECT, "digest": subject_digest(run_digest)},
        {"name": RESULT_SUBJECT, "digest": subject_digest(digest(predicate.get("result")))},
    ]
    if result_run_digest is not None:
        subjects.append({"name": RESULT_RUN_SUBJECT, "digest": subject_digest(result_run_digest)})
    return {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": PREDICATE_TYPE, "predicate": dict(predicate)}


@dataclass(frozen=True)
class Attested:
    """A rerun attestation whose signature verified: the key, the run it names, and what it says."""

    keyid: str
    run_digest: str
    result_digest: str
    predicate: RerunPredicate
    # The content digest of the result run the worker made from its result (None where it wrote no result, and
    # in statements signed before result runs were): the only run the collector stores for this attestation.
    result_run_digest: str | None = None

    @property
    def job_id(self) -> str:
        return self.predicate.jobId

    def shows(self, result_run_digest: str | None) -> bool:
        """Whether a stored result run is the one this attestation signed (any, where it signed none: made before
        result runs were signed)."""
        return self.result_run_digest is None or self.result_run_digest == result_run_digest

    @property
    def worker(self) -> str:
        return self.predicate.worker

    @property
    def hardware_class(self) -> str:
        return self.predicate.hardwareClass

    @property
    def result(self) -> dict[str, Any] | None:
        return self.predicate.result


def read_statement(payload_type: str, body: dict[str, Any], keyid: str) -> Attested:
    """A verified payload as a rerun attestation, its result matching the digest its subject names."""
    if payload_type != STATEMENT_PAYLOAD_TYPE:
        raise AttestationError(f"payload type {payload_type!r}, not an in-toto statement")
    try:
        statement = Statement.model_validate(body)
    except ValidationError as error:
        raise AttestationError(f"not a KernelIndex rerun statement: {_first_problem(error)}") from None
    subjects = {subject.name: subject.digest.get("sha256", "") for subject in statement.subject}
    if len(subjects) != len(statement.subject) or not set(subjects) <= {
        RUN_SUBJECT,
        RESULT_SUBJECT,
        RESULT_RUN_SUBJECT,
    }:
        raise AttestationError(f"the subject names {sorted(subjects)}, not the run, the result and its run once each")
    run_digest, result_digest = (DIGEST_PREFIX + subjects.get(name, "") for name in (RUN_SUBJECT, RESULT_SUBJECT))
    if not is_digest(run_digest) or not is_digest(result_digest):
        raise AttestationError("the subject names no run digest or no result digest")
    if digest(statement.predicate.result) != result_digest:
        raise AttestationError("the predicate's result is not the result its subject names")
    result_run = DIGEST_PREFIX + subjects[RESULT_RUN_SUBJECT] if RESULT_RUN_SUBJECT in subjects else None
    if result_run is not None and not is_digest(result_run):
        raise AttestationError("the subject's result run is not a sha256 digest")
    if result_run is not None and statement.predicate.result is None:
        raise AttestationError("the subject names a result run for a harness that wrote no result")
    for text in (statement.predicate.startedAt, statement.predicate.finishedAt):
        moment(text)
    return Attested(keyid, run_digest, result_digest, statement.predicate, result_run)


def moment(text: str) -> datetime:
    """A time a worker or a key set states (ISO 8601); one without an offset is taken as UTC."""
    try:
        parsed = parse_timestamp(text)
    except ValueError:
        raise AttestationError(f"not an ISO 8601 time: {text!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def verified_statement(envelope: Any, public_key: str) -> Attested:
    """A stored attestation, verified again with the key that signed it before anything reads its figures: an
    envelope edited after it came in (its signature kept) no longer verifies, and moves nothing."""
    checked = read_envelope(envelope)
    return read_statement(checked.payloadType, verify_envelope(checked, public_key), checked.signatures[0].keyid)


# -- the published key set ------------------------------------------------------------------------


class PublishedKey(_Closed):
    """A worker's key as /api/v1/workers and a dump's workers.jsonl.gz publish it."""

    name: str = Field(pattern=WORKER_NAME_PATTERN)
    classes: list[str]
    publicKey: str = Field(max_length=100)  # noqa: N815
    keyId: str  # noqa: N815
    createdAt: str  # noqa: N815
    revokedAt: str | None  # noqa: N815


def key_set(workers: Sequence[Any]) -> dict[str, PublishedKey]:
    """Published keys by key id, each id checked against its key."""
    keys: dict[str, PublishedKey] = {}
    for index, worker in enumerate(workers):
        try:
            key = PublishedKey.model_validate(worker)
        except ValidationError as error:
            raise AttestationError(f"key {index}: {_first_problem(error)}") from None
        if key_id(key.publicKey) != key.keyId:
            raise AttestationError(f"key {index} ({key.name}): its keyId is not the sha256 of its public key")
        keys[key.keyId] = key
    return keys


def read_key_set_file(path: Path) -> dict[str, PublishedKey]:
    """A key set from /api/v1/workers (`{"workers": [...]}`) or a dump's workers.jsonl(.gz), one key a line."""
    with gzip.open(path) if path.name.endswith(".gz") else path.open("rb") as handle:
        raw = handle.read(MAX_KEY_SET_BYTES + 1)
    if len(raw) > MAX_KEY_SET_BYTES:
        raise AttestationError(f"a key set larger than {MAX_KEY_SET_BYTES} bytes")
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        return key_set([parse_limited(line) for line in raw.splitlines() if line.strip()])
    value = parse_limited(raw)
    workers = value.get("workers") if isinstance(value, dict) else value
    if not isinstance(workers, list):
        raise AttestationError("a key set is {'workers': [...]} as /api/v1/workers serves it, or a list of keys")
    return key_set(workers)


def verify_with_key_set(
    envelope: Any, keys: Mapping[str, PublishedKey], *, recorded_at: datetime | None = None
) -> tuple[Attested, PublishedKey]:
    """Verify an attestation as anyone can: signed by a key of the set, of the worker and class it names.

    A revoked key verifies nothing, unless the attestation is known (`recorded_at`: when its site took it
    in, as a dump says) to have been taken in before the key was revoked.
    """
    checked = read_envelope(envelope)
    key = keys.get(checked.signatures[0].keyid)
    if key is None:
        raise AttestationError("signed by a key the key set does not hold")
    attested = read_statement(checked.payloadType, verify_envelope(checked, key.publicKey), key.keyId)
    if key.revokedAt is not None and (recorded_at is None or recorded_at >= moment(key.revokedAt)):
        raise AttestationError(f"signed by worker {key.name}'s key, revoked at {key.revokedAt}")
    if attested.worker != key.name:
        raise AttestationError(f"signed by worker {key.name}'s key, but names worker {attested.worker!r}")
    if attested.hardware_class not in key.classes:
        raise AttestationError(f"worker {key.name} is not registered for class {attested.hardware_class!r}")
    return attested, key


# -- for people -------------------------------------------------------------------------------------


def figures(attested: Attested) -> list[str]:
    """What an attestation says, line by line: its subject, who made it where, its status and its figures."""
    result = attested.result or {}
    harness = result.get("harness") or {}
    protocol = result.get("protocol") or {}
    environment = result.get("environment") or {}
    hardware = environment.get("hardware") or {}
    said = [
        f"run {attested.predicate.run} (digest {attested.run_digest}), rerun #{attested.predicate.request}",
        f"result digest {attested.result_digest}",
        f"job {attested.job_id} by worker {attested.worker} on {attested.hardware_class}"
        + (f" ({hardware.get('product')})" if hardware.get("product") else ""),
        f"harness {harness.get('name')} {harness.get('version')} ({harness.get('digest')}), "
        f"protocol {protocol.get('name')} {protocol.get('version')}",
        f"from {attested.predicate.startedAt} to {attested.predicate.finishedAt}",
        f"status {result.get('status') or 'none: the harness wrote no result'}",
    ]
    latency = result.get("latency") or {}
    if isinstance(latency.get("median_ns"), (int, float)):
        said.append(f"median latency {latency['median_ns']:.0f} ns, 95 % interval {latency.get('ci95_ns')}")
    for case in [case for case in result.get("cases") or [] if isinstance(case, dict)]:
        speedup = (case.get("speedup") or {}).get("median")
        said.append(
            f"case {case.get('uuid')}: {case.get('status')}"
            + (f", {speedup:.3g}x the reference" if isinstance(speedup, (int, float)) else "")
        )
    return said


def check_result_run(attested: Attested, twin: Any) -> str:
    """That a run's JSON twin (/runs/<id>.json) is the result run this attestation signed: its run document is
    the one the subject names, and every document it embeds is the one the run references. Its run id, else
    AttestationError."""
    if attested.result_run_digest is None:
        raise AttestationError(
            "this attestation names no result run: its harness wrote no result, or it was signed before result "
            "runs were"
        )
    run = twin.get("run") if isinstance(twin, Mapping) else None
    spec = run.get("spec") if isinstance(run, Mapping) else None
    if not isinstance(twin, Mapping) or not isinstance(run, Mapping) or not isinstance(spec, Mapping):
        raise AttestationError("not a run's JSON twin: it has no run document")
    if digest(run) != attested.result_run_digest:
        raise AttestationError(
            f"its run document is {digest(run)}, not the result run {attested.result_run_digest} the worker signed"
        )
    for role, field in REFERENCE_FIELDS.items():
        if role in twin and digest(twin[role]) != spec.get(field):
            raise AttestationError(f"its {role} document is not the one its run references ({field})")
    ran = (spec.get("workloadDigest"), spec.get("implementationDigest"))
    if ran != (attested.predicate.workloadDigest, attested.predicate.implementationDigest):
        raise AttestationError("its run names another definition or solution than the attestation")
    return str((run.get("metadata") or {}).get("name") or "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m records.attestation", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser("verify", help="check an attestation against a published key set, offline")
    verify.add_argument("file", type=Path, help="a DSSE envelope (/reruns/<id>/attestation.json)")
    verify.add_argument(
        "--keys", type=Path, required=True, help="the workers' keys: /api/v1/workers, or a dump's workers.jsonl.gz"
    )
    verify.add_argument("--run", type=Path, help="the result run's JSON twin (/runs/<id>.json), checked against it")
    verify.add_argument(
        "--recorded-at",
        type=moment,
        help="when the site took the attestation in (the rerun's attestationRecordedAt): a key revoked after that "
        "still verifies it, as the site keeps it",
    )
    options = parser.parse_args(argv)
    try:
        raw = options.file.read_bytes()
        if len(raw) > MAX_ENVELOPE_BYTES:
            raise AttestationError(f"larger than {MAX_ENVELOPE_BYTES} bytes, which no attestation is")
        keys = read_key_set_file(options.keys)
        attested, key = verify_with_key_set(parse_limited(raw), keys, recorded_at=options.recorded_at)
        result_run = check_result_run(attested, parse_limited(options.run.read_bytes())) if options.run else None
    except (AttestationError, OSError, ValueError, LimitError) as error:
        print(f"{options.file}: NOT verified: {error}", file=sys.stderr)
        return 1
    print(f"{options.file}: verified: signed by worker {key.name} ({key.keyId})")
    if key.revokedAt is not None:
        print(
            f"  worker {key.name}'s key was revoked at {key.revokedAt}, after the site recorded this "
            f"attestation ({options.recorded_at.isoformat()}): it counts, as it does on the site"
        )
    if options.run:
        print(f"  {options.run} is the result run the worker signed ({result_run}, {attested.result_run_digest})")
    for line in figures(attested):
        print(f"  {line}")
    return 0


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    return f"{where}: {problem['msg']}" if where else str(problem["msg"])


if __name__ == "__main__":
    sys.exit(main())
