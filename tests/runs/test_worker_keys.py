"""The worker registry: `manage.py worker_key`, the admin, and this machine's own key for `make run`."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from records.attestation import key_id, new_private_key, public_key_text, read_key_file
from runs.models import WorkerKey
from runs.worker_keys import local_worker_key, revoke_worker_key

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("memory_broker")]


def worker_key(*arguments: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("worker_key", *arguments, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_create_prints_the_key_file_once_and_keeps_only_the_public_key() -> None:
    key_file, said = worker_key("create", "gpu-1", "--class", "nvidia-h100", "--class", "cpu")
    identity = read_key_file(key_file)
    assert (identity.name, identity.classes) == ("gpu-1", ("cpu", "nvidia-h100"))
    registered = WorkerKey.objects.get(name="gpu-1")
    assert registered.public_key == public_key_text(identity.key.public_key())
    assert registered.key_id == key_id(registered.public_key) and "shown this once" in said
    assert "PRIVATE" not in str(WorkerKey.objects.values())
    with pytest.raises(CommandError, match="registered already"):
        worker_key("create", "gpu-1", "--class", "cpu")
    with pytest.raises(CommandError, match="nvidia-h999"):
        worker_key("create", "gpu-2", "--class", "nvidia-h999")
    with pytest.raises(CommandError, match="a worker's name"):
        worker_key("create", "gpu 3; rm", "--class", "cpu")
    assert WorkerKey.objects.count() == 1


def test_the_local_key_is_made_once_and_again_when_the_registry_no_longer_holds_it(
    settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path
    path = local_worker_key("cpu")
    assert path == tmp_path / "worker-local.key" and path.stat().st_mode & 0o777 == 0o600
    first = read_key_file(path.read_text())
    assert local_worker_key("cpu") == path and read_key_file(path.read_text()).key_id == first.key_id
    assert revoke_worker_key(first.name)
    second = read_key_file(local_worker_key("cpu").read_text())
    assert second.key_id != first.key_id and second.name != first.name
    assert WorkerKey.objects.filter(revoked_at=None).count() == 1


def test_the_admin_registers_a_key_by_its_public_half_and_revokes_it(client: Client) -> None:
    client.force_login(User.objects.create_superuser("admin", password="x"))
    public = public_key_text(new_private_key().public_key())
    refused = client.post("/admin/runs/workerkey/add/", {"name": "gpu-9", "hardware": "cpu", "public_key": "abc"})
    assert refused.status_code == 200 and "not an ed25519 public key" in refused.content.decode()
    added = client.post(
        "/admin/runs/workerkey/add/", {"name": "gpu-9", "hardware": "nvidia-h100, cpu", "public_key": public}
    )
    assert added.status_code == 302, added.content.decode()[:2000]
    key = WorkerKey.objects.get(name="gpu-9")
    assert (key.hardware, key.key_id, key.revoked_at) == ("cpu,nvidia-h100", key_id(public), None)
    client.post("/admin/runs/workerkey/", {"action": "revoke", "_selected_action": [key.pk]})
    key.refresh_from_db()
    assert key.revoked_at is not None
