"""The worker registry: `manage.py worker_key`, the keys published at /api/v1/workers, this machine's own key
for `make run`, and `manage.py verify_attestations`."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from records.attestation import key_id, new_private_key, public_key_text, read_key_file
from runs.models import Run
from tests.results import harness_result
from tests.runs import attested
from verification.models import RerunAttestation, WorkerKey
from verification.reruns import request_rerun
from verification.worker_keys import local_worker_key, revoke_worker_key, site_public_key

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("memory_broker")]


def worker_key(*arguments: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("worker_key", *arguments, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_create_prints_the_key_file_once_and_keeps_only_the_public_key() -> None:
    key_file, said = worker_key("create", "gpu-1", "--class", "nvidia-h100", "--class", "cpu")
    identity = read_key_file(key_file)
    assert (identity.name, identity.classes) == ("gpu-1", ("cpu", "nvidia-h100"))
    # The site's public key rides along: the worker checks every job with it.
    assert identity.site_key == site_public_key()
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


def test_the_keys_and_their_revocations_are_published(client: Client) -> None:
    worker_key("create", "gpu-1", "--class", "cpu")
    worker_key("create", "gpu-2", "--class", "cpu")
    assert "revoked worker gpu-2's key" in worker_key("revoke", "gpu-2")[0]
    with pytest.raises(CommandError, match="no unrevoked key"):
        worker_key("revoke", "gpu-2")
    published = {key["name"]: key for key in client.get("/api/v1/workers").json()["workers"]}
    assert published["gpu-1"]["revokedAt"] is None and published["gpu-2"]["revokedAt"].endswith("Z")
    assert published["gpu-1"]["keyId"] == WorkerKey.objects.get(name="gpu-1").key_id
    assert published["gpu-1"]["classes"] == ["cpu"]
    listed = worker_key("list")[0]
    assert "gpu-1  cpu" in listed and "revoked" in listed


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


def test_the_site_key_is_made_once_published_and_a_local_key_file_follows_a_new_one(
    settings: Any, tmp_path: Path, client: Client
) -> None:
    settings.VAR_DIR = tmp_path
    settings.SITE_KEY_FILE = tmp_path / "site.key"
    site = site_public_key()
    assert site_public_key() == site and settings.SITE_KEY_FILE.stat().st_mode & 0o777 == 0o600
    assert client.get("/api/v1/workers").json()["site"] == {"publicKey": site, "keyId": key_id(site)}
    first = read_key_file(local_worker_key("cpu").read_text())
    assert first.site_key == site
    settings.SITE_KEY_FILE = tmp_path / "another-site.key"  # a new site key: every key file must be made anew
    second = read_key_file(local_worker_key("cpu").read_text())
    assert second.site_key == site_public_key() != site and second.key_id != first.key_id


def test_verify_attestations_checks_every_stored_one(demo: Callable[[str], Run]) -> None:
    run = demo("rmsnorm-row-loop")
    request = attested.finish(request_rerun(run, user=None), harness_result(median=1e12))
    out = io.StringIO()
    call_command("verify_attestations", stdout=out)
    assert "1 of 1 attestation(s) verified" in out.getvalue()
    # A key revoked after the attestation was taken in leaves it standing...
    assert revoke_worker_key(attested.WORKER)
    call_command("verify_attestations", stdout=io.StringIO())
    # ...one revoked before does not, nor does a stored envelope that was changed.
    assert request.finished_at is not None
    WorkerKey.objects.update(revoked_at=request.finished_at - timedelta(seconds=1))
    with pytest.raises(CommandError, match="1 attestation"):
        call_command("verify_attestations", stdout=io.StringIO())
    WorkerKey.objects.update(revoked_at=None)
    stored = RerunAttestation.objects.get()
    stored.envelope["payload"] = stored.envelope["payload"][:-8] + "AAAAAAA="
    stored.save()
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 attestation"):
        call_command("verify_attestations", stdout=out)
    assert f"rerun #{request.pk} attempt 1: NOT verified" in out.getvalue()


def test_the_admin_registers_a_key_by_its_public_half_and_revokes_it(client: Client) -> None:
    client.force_login(User.objects.create_superuser("admin", password="x"))
    public = public_key_text(new_private_key().public_key())
    form = {"name": "gpu-9", "hardware": "cpu", "public_key": "abc"}
    refused = client.post("/admin/verification/workerkey/add/", form)
    assert refused.status_code == 200 and "not an ed25519 public key" in refused.content.decode()
    added = client.post(
        "/admin/verification/workerkey/add/", {"name": "gpu-9", "hardware": "nvidia-h100, cpu", "public_key": public}
    )
    assert added.status_code == 302, added.content.decode()[:2000]
    key = WorkerKey.objects.get(name="gpu-9")
    assert (key.hardware, key.key_id, key.revoked_at) == ("cpu,nvidia-h100", key_id(public), None)
    client.post("/admin/verification/workerkey/", {"action": "revoke", "_selected_action": [key.pk]})
    key.refresh_from_db()
    assert key.revoked_at is not None
