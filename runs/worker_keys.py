"""The worker registry's writes: a new key (its private half printed once, never stored), and the local key.

`make run` (deploy/run.py) and the in-process rerun path use a local key, made on first start in the
var/ folder and registered here; a production worker's key is made by `manage.py worker_key create`.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from harness.worker import WorkerKey as SigningKey
from harness.worker import key_file_text, read_key_file
from records.attestation import key_id, new_private_key, private_key_text, public_key_text
from records.sources.hardware import hardware_class_named
from runs.models import WorkerKey

LOCAL_KEY_FILE = "worker-local.key"


class WorkerKeyError(Exception):
    """A key that cannot be made as asked; the message says why."""


@dataclass(frozen=True)
class CreatedKey:
    registered: WorkerKey
    key_file: str  # the private key, as the worker reads it (--key)


def create_worker_key(name: str, classes: list[str]) -> CreatedKey:
    """Register a new worker key; the private half is returned once, for the operator to hand the worker."""
    try:
        names = [hardware_class_named(hardware).name for hardware in classes]
    except Exception as unknown:
        raise WorkerKeyError(str(unknown)) from None
    if not names:
        raise WorkerKeyError("a worker needs at least one hardware class (--class)")
    if WorkerKey.objects.filter(name=name).exists():
        raise WorkerKeyError(f"a worker named {name!r} is registered already; revoke it and choose another name")
    private = new_private_key()
    public = public_key_text(private.public_key())
    registered = WorkerKey.objects.create(name=name, hardware=",".join(names), public_key=public, key_id=key_id(public))
    return CreatedKey(registered, key_file_text(name, names, private_key_text(private)))


def revoke_worker_key(name: str) -> bool:
    return bool(WorkerKey.objects.filter(name=name, revoked_at__isnull=True).update(revoked_at=timezone.now()))


def local_key_path() -> Path:
    return Path(settings.VAR_DIR) / LOCAL_KEY_FILE


def local_worker_key(hardware: str) -> SigningKey:
    """This machine's own worker key (var/worker-local.key), made and registered on first use, for `hardware`."""
    path = local_key_path()
    with transaction.atomic():
        if path.is_file():
            key = read_key_file(path)
            registered = WorkerKey.objects.unrevoked().filter(
                name=key.name, key_id=key_id(public_key_text(key.key.public_key()))
            )
            found = registered.first()
            if found is not None:
                if hardware not in found.classes:
                    WorkerKey.objects.filter(pk=found.pk).update(hardware=",".join([*found.classes, hardware]))
                return key
        name = f"local-{socket.gethostname()}"[:60]
        WorkerKey.objects.filter(name=name, revoked_at__isnull=True).update(revoked_at=timezone.now())
        name = f"{name}-{WorkerKey.objects.filter(name__startswith=name).count() + 1}"
        created = create_worker_key(name, [hardware])
        path.write_text(created.key_file)
        path.chmod(0o600)
    return read_key_file(path)
