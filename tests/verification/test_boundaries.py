"""verification/ holds the verification domain and imports runs/, which never imports it; the move kept every
URL, command and Celery task name that answered before (README.md's map of the code names the two apps)."""

from __future__ import annotations

import ast
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission, User
from django.core.management import call_command, get_commands
from django.urls import resolve, reverse

from kernelindex.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]
MOVED_MODELS = ("RerunRequest", "EvidenceChange", "RerunWorker", "WorkerKey", "RerunAttestation", "VerificationPause")
# Every URL name the verification pages had under runs' namespace, with the path it answered at.
MOVED_URLS = {
    "runs:reruns": ("runs/R1/reruns", ["R1"]),
    "runs:request_rerun": ("runs/R1/rerun", ["R1"]),
    "runs:verification": ("verification", []),
    "runs:verification_json": ("verification.json", []),
    "runs:rerun_feed": ("reruns/feed.atom", []),
    "runs:rerun_attestation": ("reruns/7/attestation.json", [7]),
}
MOVED_COMMANDS = ("local_worker", "reevaluate", "rerun", "verify_attestations", "worker_key")
# The names deployed workers, queued messages and the beat schedule send them by.
TASK_NAMES = {
    "kernelindex.worker_message": "verification.tasks",
    "runs.tasks.sweep_reruns": "verification.tasks",
    "runs.tasks.make_daily_dump": "runs.tasks",
}


def verification_references(path: Path, root: Path = ROOT) -> Iterator[str]:
    """Each way a module reaches verification: an import (a function's own included), or a string that names it
    to an importer or the app registry (import_module("verification..."), apps.get_model("verification", ...))."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value] if node.value == "verification" or node.value.startswith("verification.") else []
        else:
            names = []
        for name in names:
            if name.split(".")[0] == "verification":
                yield f"{path.relative_to(root)}:{node.lineno}: {name}"


def test_runs_never_imports_verification() -> None:
    modules = [path for path in (ROOT / "runs").rglob("*.py") if "migrations" not in path.parts]
    assert len(modules) > 30
    assert [found for path in modules for found in verification_references(path)] == []


def test_the_check_sees_an_import_hidden_in_a_function(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden.py"
    hidden.write_text(
        "from django.apps import apps\n"
        "def later():\n"
        "    from verification.reruns import request_rerun\n"
        "    return apps.get_model('verification', 'RerunRequest'), request_rerun\n"
    )
    found = sorted(verification_references(hidden, tmp_path))
    assert found == ["hidden.py:3: verification.reruns", "hidden.py:4: verification"]


def test_the_domain_models_belong_to_verification_on_their_old_tables() -> None:
    for name in MOVED_MODELS:
        model = apps.get_model("verification", name)
        assert model._meta.db_table == f"runs_{name.lower()}"
        with pytest.raises(LookupError):
            apps.get_model("runs", name)


@pytest.mark.django_db
def test_the_rerun_permission_is_verifications() -> None:
    moderator = User.objects.create_user("moderator")
    moderator.user_permissions.add(Permission.objects.get(codename="request_rerun"))
    moderator = User.objects.get(pk=moderator.pk)  # permissions are cached on the instance
    assert moderator.has_perm("verification.request_rerun")


@pytest.mark.parametrize("name", sorted(MOVED_URLS))
def test_every_moved_url_keeps_its_name_and_path(name: str) -> None:
    path, args = MOVED_URLS[name]
    assert reverse(name, args=args) == f"/{path}"
    assert resolve(f"/{path}").func.__module__.split(".")[0] == "verification"


@pytest.mark.parametrize("command", MOVED_COMMANDS)
def test_every_moved_command_answers_from_verification(command: str) -> None:
    assert get_commands()[command] == "verification"
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command(command, "--help", stdout=out)
    assert exited.value.code == 0


@pytest.mark.parametrize("task", sorted(TASK_NAMES))
def test_every_task_keeps_its_registered_name(task: str) -> None:
    celery_app.loader.import_default_modules()
    assert celery_app.tasks[task].__module__ == TASK_NAMES[task]
