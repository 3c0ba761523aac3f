"""A rerun end to end as production runs it, and checked as anyone can check it.

The rerun worker is `python -m harness.worker` with the broker, its class and its key in its environment
and nothing else: no database, no Django settings. It completes a demo rerun; the run page and the
result's page link the attestation it signed; a dump carries it with the workers' keys, and
`python -m records.attestation verify` accepts it with only those published keys, in a process that
knows nothing of the site.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from runs.models import Run
from tests.pages import visible_text
from tests.runs.conftest import ROOT, Worker, wait_for
from verification.models import RerunRequest

pytestmark = pytest.mark.django_db(transaction=True)
# What must never reach a rerun worker: the site's database, settings and secrets.
SITE_VARIABLES = ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "SECRET_KEY", "REDIS_URL", "CELERY_BROKER_URL")


def environment_of(pid: int) -> dict[str, str]:
    raw = (Path("/proc") / str(pid) / "environ").read_bytes()
    return dict(entry.split("=", 1) for entry in raw.decode().split("\0") if "=" in entry)


def verify(attestation: Path, keys: Path) -> subprocess.CompletedProcess[str]:
    """`python -m records.attestation verify`, in a process that has this checkout's code and nothing else."""
    command = [sys.executable, "-m", "records.attestation", "verify", str(attestation), "--keys", str(keys)]
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, cwd=attestation.parent, env=environment, capture_output=True, text=True, timeout=60)


def test_a_worker_without_a_database_attests_a_demo_rerun_that_anyone_can_verify_from_a_dump(
    client: Client, moderator: User, demo: Callable[[str], Run], worker: Worker, tmp_path: Path
) -> None:
    assert worker.process is not None
    environment = environment_of(worker.process.pid)
    assert not set(SITE_VARIABLES) & set(environment), sorted(environment)
    assert environment["KERNELINDEX_BROKER_URL"].startswith("redis://")

    run = demo("rmsnorm-row-loop")
    client.force_login(moderator)
    assert client.post(f"/runs/{run.run_id}/rerun", {"reason": "tests"}).status_code == 302
    rerun = RerunRequest.objects.get(run=run)
    wait_for(rerun)
    rerun.refresh_from_db()
    assert (rerun.state, rerun.verdict) == ("succeeded", "not_reproduced"), rerun.verdict_reason + worker.log()[-3000:]
    assert rerun.attestation is not None and rerun.attestation.worker_key.name == "tests-cpu"

    link = f"/reruns/{rerun.pk}/attestation.json"
    anonymous = Client()
    for page in (run.get_absolute_url(), rerun.result_run.get_absolute_url()):  # type: ignore[union-attr]
        html = anonymous.get(page).content.decode()
        assert f'href="{link}"' in html, page
    assert "signed by worker tests-cpu" in visible_text(anonymous.get(run.get_absolute_url()).content)
    served = anonymous.get(link)
    assert served.status_code == 200 and served.json() == rerun.attestation.envelope
    assert anonymous.get(f"/runs/{run.run_id}.json").json()["reruns"][0]["attestation"] == link

    dump = tmp_path / "dump"
    call_command("dump", out=dump, stdout=io.StringIO())
    lines = [json.loads(line) for line in gzip.decompress((dump / "reruns.jsonl.gz").read_bytes()).splitlines()]
    (line,) = [line for line in lines if line["number"] == rerun.pk]
    (tmp_path / "attestation.json").write_text(json.dumps(line["attestation"]))
    done = verify(tmp_path / "attestation.json", dump / "workers.jsonl.gz")
    assert done.returncode == 0, done.stderr
    assert "verified: signed by worker tests-cpu" in done.stdout
    assert f"run {run.run_id} (digest {rerun.run_digest}), rerun #{rerun.pk}" in done.stdout
    assert "by worker tests-cpu on cpu" in done.stdout and "status PASSED" in done.stdout

    # The same with the key set the API publishes, and the envelope the page links.
    (tmp_path / "workers.json").write_text(anonymous.get("/api/v1/workers").content.decode())
    (tmp_path / "linked.json").write_bytes(served.content)
    assert verify(tmp_path / "linked.json", tmp_path / "workers.json").returncode == 0
    out = io.StringIO()
    call_command("verify_attestations", stdout=out)
    assert "1 of 1 attestation(s) verified" in out.getvalue()
