"""Every URL the site has, from the URLconf itself, with real arguments from an imported sample."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from attestations.models import Attestation, IssueReport
from harness import harness_digest
from records.attestation import STATEMENT_PAYLOAD_TYPE, key_id, new_private_key, public_key_text
from runs.models import Definition, Run
from tests.conftest import ImportRuns
from verification.models import RerunAttestation, RerunRequest, WorkerKey


def named_patterns(resolver: URLResolver, namespace: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from named_patterns(entry, inner)
        elif entry.name:
            yield f"{namespace}{entry.name}", entry


def example_arguments(name: str, pattern: URLPattern, run: Run, user: User) -> dict[str, str]:
    """A real value for each of the pattern's parameters, so the request reaches the view's lookups."""
    definition = run.definition
    assert definition is not None
    values = {
        "run_id": run.run_id,
        "a": run.run_id,
        "b": run.run_id,
        "digest": run.digest,
        "key": "sol-execbench" if "source" in name else str(run.group.key if run.group else ""),
        "source": definition.source,
        "name": definition.name,
        "app_label": "runs",
        "content_type_id": str(ContentType.objects.get_for_model(Run).pk),
        "object_id": str(run.pk),
        "id": str(user.pk),
        "rerun_id": str(RerunRequest.objects.values_list("pk", flat=True).first()),
        "file": "manifest.json",  # of a dump: none is made here, so its address answers 404
        "hex_digest": harness_digest().removeprefix("sha256:"),  # a harness version's page: the one this code holds
    }
    model = _admin_model(name)
    if model is not None and (instance := model.objects.first()) is not None:
        values["object_id"] = str(instance.pk)
    return {param: values[param] for param in pattern.pattern.regex.groupindex}


def _admin_model(name: str) -> type | None:
    """The model of an admin URL name such as `admin:runs_run_change`."""
    for model in apps.get_models():
        if name.startswith(f"admin:{model._meta.app_label}_{model._meta.model_name}_"):
            return model
    return None


@pytest.fixture
def every_url(import_runs: ImportRuns, sample: Path, admin_user: User) -> list[str]:
    import_runs(sample / "sol-execbench")
    run = Run.objects.filter(definition__isnull=False, group__isnull=False).order_by("run_id").first()
    assert run is not None and Definition.objects.exists()
    Attestation.objects.create(run=run, kind="note", body="a note")
    IssueReport.objects.create(run=run, category="other", body="a report")
    rerun = RerunRequest.objects.create(
        run=run, run_digest=run.digest, hardware="nvidia-b200", reason="a rerun", harness_digest=harness_digest()
    )
    # Its attestation as the collector keeps one (the envelope is served as it is, so any stands in here).
    public = public_key_text(new_private_key().public_key())
    key = WorkerKey.objects.create(
        name="gpu-1", hardware="nvidia-b200", public_key=public, key_id=key_id(public), created_at=timezone.now()
    )
    envelope = {"payloadType": STATEMENT_PAYLOAD_TYPE, "payload": "", "signatures": [{"keyid": key.key_id, "sig": ""}]}
    rerun.attestation = RerunAttestation.objects.create(
        request=rerun, attempt=1, job_id="0" * 32, worker_key=key, envelope=envelope, received_at=timezone.now()
    )
    rerun.save(update_fields=["attestation"])
    urls = [
        reverse(name, kwargs=example_arguments(name, pattern, run, admin_user))
        for name, pattern in named_patterns(get_resolver())
    ]
    assert "/admin/login/" in urls and f"/runs/{run.run_id}/notes" in urls and "/healthz" in urls
    return urls
