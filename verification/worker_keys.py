"""The worker registry's writes: a new key (its private half handed out once, never kept), a revocation, and
this machine's own key for `make run`.

A rerun worker proves who it is with an ed25519 key (records.attestation); the
registry keeps the public half, and the collector takes a worker's word only
under a registered key that is not revoked, for the classes it is registered for.
"""

from __future__ import annotations

import os
import re
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.utils import timezone

from records.attestation import (
    WORKER_NAME_PATTERN,
    AttestationError,
    key_file_text,
    key_id,
    load_private_key,
    new_private_key,
    private_key_pem,
    public_key_text,
    read_key_file,
)
from records.hardware import UnknownHardwareClassError, hardware_class_named
from verification.models import WorkerKey

LOCAL_KEY_FILE = "worker-local.key"
SITE_KEY_LINE = "# KernelIndex site key: signs the rerun jobs this site sends. Keep it; never hand it out.\n"


class WorkerKeyError(Exception):
    """A key that cannot be made or changed as asked; the message says why."""


@dataclass(frozen=True)
class CreatedKey:
    registered: WorkerKey
    # The worker's key file (`python -m harness.worker --key FILE`): the only copy of the private key.
    key_file: str


def create_worker_key(name: str, classes: list[str]) -> CreatedKey:
    """Register a new worker key; the private half is returned once, for the operator to hand the worker."""
    if not re.fullmatch(WORKER_NAME_PATTERN, name):
        raise WorkerKeyError(f"{name!r}: a worker's name is letters, digits, '.', '_' and '-', at most 100")
    try:
        names = sorted({hardware_class_named(hardware).name for hardware in classes})
    except UnknownHardwareClassError as unknown:
        raise WorkerKeyError(str(unknown)) from None
    if not names:
        raise WorkerKeyError("a worker needs at least one hardware class (--class)")
    private = new_private_key()
    public = public_key_text(private.public_key())
    try:
        with transaction.atomic():
            registered = WorkerKey.objects.create(
                name=name, hardware=",".join(names), public_key=public, key_id=key_id(public), created_at=timezone.now()
            )
    except IntegrityError:
        raise WorkerKeyError(f"a worker named {name!r} is registered already; give this one another name") from None
    return CreatedKey(registered, key_file_text(name, names, private, site_public_key()))


def revoke_worker_key(name: str) -> bool:
    """Revoke a worker's key: from now on nothing it signs is taken, and the published key set says since when."""
    revoked = WorkerKey.objects.registered_here().filter(name=name, revoked_at__isnull=True)
    return bool(revoked.update(revoked_at=timezone.now()))


def local_key_path(slot: int = 1) -> Path:
    """The key file of this machine's local worker number `slot`: var/worker-local.key, then worker-local-2.key..."""
    name = LOCAL_KEY_FILE if slot == 1 else LOCAL_KEY_FILE.replace(".key", f"-{slot}.key")
    return Path(settings.VAR_DIR) / name


def local_worker_key(hardware: str, slot: int = 1) -> Path:
    """This machine's own worker key file (var/worker-local.key; another per slot, for a second local worker the
    quorum needs) for `hardware`, made and registered on first use, and made again if the registry no longer
    holds it unrevoked (a new database, a revocation)."""
    path = local_key_path(slot)
    if path.is_file():
        try:
            identity = read_key_file(path.read_text())
        except AttestationError:
            identity = None
        usable = WorkerKey.objects.registered_here().filter(revoked_at__isnull=True)
        current = identity is not None and identity.site_key == site_public_key() and hardware in identity.classes
        if current and usable.filter(key_id=identity.key_id).exists():  # type: ignore[union-attr]
            return path
    # Each slot's names apart ('local-host-1', 'local2-host-1'): making one slot's key revokes only that slot's.
    stem = f"local{'' if slot == 1 else slot}-" + re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname())[:80]
    # A name not taken: keys are never deleted, so an earlier local key keeps its name.
    taken = set(WorkerKey.objects.registered_here().filter(name__startswith=stem).values_list("name", flat=True))
    name = next(f"{stem}-{number}" for number in range(1, len(taken) + 2) if f"{stem}-{number}" not in taken)
    WorkerKey.objects.registered_here().filter(name__startswith=stem, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    created = create_worker_key(name, [hardware])
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(created.key_file)
    return path


def site_signing_key() -> Ed25519PrivateKey:
    """The site's own key (settings.SITE_KEY_FILE), which signs every job it sends; made there on first use."""
    path = Path(settings.SITE_KEY_FILE)
    if not path.is_file():
        _write_new_site_key(path)
    try:
        return load_private_key(path.read_text())
    except (OSError, AttestationError) as error:
        raise ImproperlyConfigured(f"SITE_KEY_FILE {path}: {error}") from None


def _write_new_site_key(path: Path) -> None:
    """A new key, readable by the site alone, put in place whole (a link, which fails where another process of
    the site put one first, whose key is then the site's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".site-key-", delete=False) as handle:
        handle.write(SITE_KEY_LINE + private_key_pem(new_private_key()))
    try:
        os.link(handle.name, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(handle.name)


def site_public_key() -> str:
    """The site's public key (base64), as the workers' key files and /api/v1/workers carry it."""
    return public_key_text(site_signing_key().public_key())
