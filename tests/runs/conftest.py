"""Fixtures for reruns: runnable runs, a broker, a Redis server and worker processes of the tests' own: the
web tier's Celery worker and a rerun worker (python -m harness.worker), as production runs them."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.db import connection

from harness.parent.environment import detect_hardware_class
from records import broker
from records.canonical import digest
from records.hardware import HARDWARE_CLASSES
from records.schema import REFERENCE_FIELDS, make_document
from records.sources.runnable import read_definition_folder, read_solution
from records.worker_protocol import RESULTS_QUEUE
from runs.models import Run
from tests.conftest import ImportRuns
from verification.models import RerunRequest
from verification.worker_keys import create_worker_key

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "demo"
# How long a test waits for a worker to finish a rerun: a CPU rerun of a demo run takes seconds.
# An infinite loop runs to RERUN_TIMEOUT_SECONDS, then the harness checks that timeout with the reference as
# the solution.
RERUN_WAIT_SECONDS = 240


def use_broker(url: str | None) -> None:
    """Point this process's Celery app at another broker (None: back to the configured one).

    Celery prefers a CELERY_BROKER_URL in the environment (as CI sets) to its `broker_url`
    setting, but not to `broker_write_url`, which is what sending uses.
    """
    from kernelindex.celery import app

    app.conf.broker_write_url = url
    app._pool = None  # type: ignore[attr-defined]
    app.amqp._producer_pool = None


@pytest.fixture
def memory_broker() -> Iterator[None]:
    """Kombu's in-memory transport: requests are really sent, and nothing outside this process sees them."""
    use_broker("memory://")
    yield
    use_broker(None)


@pytest.fixture
def moderator(db: None) -> User:
    """Staff who may look at everything and ask for reruns, and nothing more."""
    user = User.objects.create_user("moderator", password="x", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    user.user_permissions.add(Permission.objects.get(codename="request_rerun"))
    return user


@pytest.fixture
def staff_without_rerun(db: None) -> User:
    user = User.objects.create_user("viewer", password="x", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    return user


@pytest.fixture
def demo(import_runs: ImportRuns) -> Callable[[str], Run]:
    """Import the demo set; returns a lookup of its runs by implementation name."""
    import_runs(DEMO)
    return lambda name: Run.objects.get(source="kernelindex", implementation_name=name, external_id__startswith="demo")


def demo_manifest_parts() -> dict[str, Any]:
    first = (DEMO / "runs" / "reported.jsonl").read_text().splitlines()[0]
    return json.loads(first)


@pytest.fixture
def solution_run(import_runs: ImportRuns, tmp_path: Path) -> Callable[..., Run]:
    """A reported run of a solution written by the test, on a demo definition (hostile ones included)."""

    def make(name: str, source: str, *, definition: str = "rmsnorm_h2048", reported_ns: float = 1e6) -> Run:
        folder = tmp_path / name
        folder.mkdir()
        solution = {
            "name": name,
            "definition": definition,
            "author": "tests",
            "spec": {
                "language": "python",
                "entry_point": "kernel.py::run",
                "destination_passing_style": False,
                "target_hardware": ["cpu"],
            },
            "sources": [{"path": "kernel.py", "content": source}],
        }
        (folder / "solution.json").write_text(json.dumps(solution))
        parts = demo_manifest_parts()
        documents = {
            "protocol": parts["protocol"],
            "environment": parts["environment"],
            "workload": read_definition_folder(DEMO / "definitions" / definition)[0].value,
            "implementation": read_solution(folder / "solution.json").value,
        }
        spec: dict[str, Any] = {
            "status": "passed",
            "timing": {"latencyNs": {"median": reported_ns}, "primaryStatistic": "median"},
            "sourceNative": {"source": "kernelindex", "externalId": f"tests/{name}"},
        }
        spec.update({REFERENCE_FIELDS[role]: digest(document) for role, document in documents.items()})
        manifest = {"run": make_document("BenchmarkRun", f"tests-{name}", spec, title=name), **documents}
        (folder / "manifest.json").write_text(json.dumps(manifest))
        import_runs(folder / "manifest.json")
        return Run.objects.get(external_id=f"tests/{name}")

    return make


def demo_manifest_with_latencies_divided(name: str, divisor: float) -> dict[str, Any]:
    """The demo run of `name`'s manifest with every latency it gives (its own, each case's and each case's
    reference's) divided by `divisor`: its speedups as honest as the demo's, its latencies not."""
    for line in (DEMO / "runs" / "reported.jsonl").read_text().splitlines():
        manifest: dict[str, Any] = json.loads(line)
        spec = manifest["run"]["spec"]
        if spec["sourceNative"]["externalId"].endswith(f"/{name}"):
            break
    else:
        raise LookupError(f"no demo run of {name}")
    spec["timing"]["latencyNs"]["median"] /= divisor
    for case in spec["cases"]:
        case["latencyNs"] /= divisor
        case["referenceLatencyNs"] /= divisor
    return manifest


@pytest.fixture
def restated_demo(import_runs: ImportRuns, tmp_path: Path) -> Callable[[str, float], Run]:
    """A demo run reported again under an id of its own, its latencies divided by `divisor`
    (demo_manifest_with_latencies_divided)."""

    def make(name: str, divisor: float) -> Run:
        manifest = demo_manifest_with_latencies_divided(name, divisor)
        spec = manifest["run"]["spec"]
        spec["sourceNative"]["externalId"] = f"tests/restated/{name}"
        manifest["run"] = make_document("BenchmarkRun", f"tests-restated-{name}", spec, title=f"{name}, restated")
        path = tmp_path / f"restated-{name}.json"
        path.write_text(json.dumps(manifest))
        import_runs(path)
        return Run.objects.get(external_id=f"tests/restated/{name}")

    return make


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisServer:
    """A real redis-server of the test's own, which a test may stop and start again on the same port, with the
    Redis users production has (records/broker.py): the web tier's, and one per class for its rerun workers, each
    with a password made for this server alone. Its `default` user is off."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self.process: subprocess.Popen[bytes] | None = None
        self.web_password = secrets.token_hex(16)
        # Every registered class's worker, and this CPU's own class (its model's), which a test's worker may serve.
        classes = {hardware.name for hardware in HARDWARE_CLASSES} | {detect_hardware_class()}
        self.worker_passwords = {name: secrets.token_hex(16) for name in classes}
        self.acl_file = folder / "users.acl"
        self.acl_file.write_text(broker.acl_file(self.web_password, self.worker_passwords))

    def url(self, db: int = 0) -> str:
        """The web tier's URL: its cache and broker."""
        return broker.user_url(broker.WEB_USER, self.web_password, "127.0.0.1", self.port, db)

    def worker_url(self, hardware: str, db: int = 0) -> str:
        """The URL a rerun worker of this class is given."""
        password = self.worker_passwords[hardware]
        return broker.user_url(broker.worker_user(hardware), password, "127.0.0.1", self.port, db)

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        # DEBUG enabled, so that where tests/runs/test_broker_doors.py finds it refused, the ACL refused it.
        command += ["--aclfile", str(self.acl_file), "--enable-debug-command", "local"]
        self.process = subprocess.Popen([*command, "--dir", str(self.folder)], stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (CI installs it)")
    server = RedisServer(tmp_path)
    server.start()
    use_broker(server.url(0))
    yield server
    use_broker(None)
    server.stop()


def database_url_of_this_test() -> str:
    """The database this test runs on, as a URL a worker process can open."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
        return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    return f"sqlite:///{db['NAME']}"


class Process:
    """One worker process in a process group of its own, as an operator starts it, with its log in a file."""

    def __init__(self, name: str, command: list[str], environment: dict[str, str], folder: Path) -> None:
        self.name, self.command, self.environment, self.folder = name, command, environment, folder
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        log = self.log_path.open("wb")
        command = [part.replace("{n}", str(self.starts)) for part in self.command]
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=self.environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    @property
    def log_path(self) -> Path:
        return self.folder / f"{self.name}-{self.starts}.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.starts else ""

    def wait_for(self, text: str, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if text in self.log():
                return
            if self.process is not None and self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"the {self.name} worker did not say {text!r}:\n{self.log()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL the worker and everything it started, as a crash or an OOM killer would."""
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
            self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None


class Worker:
    """The two workers production runs, on the test's broker: the web tier's (`celery -A kernelindex worker
    -B`: the sweep and the collector, on the test's database) and a rerun worker (`python -m harness.worker`,
    with the broker, its class and its key, and neither a database nor Django settings)."""

    def __init__(self, web: Process, rerun: Process, broker: str) -> None:
        self.web, self.rerun, self.broker = web, rerun, broker

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The rerun worker's process: the one that runs the kernels."""
        return self.rerun.process

    def start(self) -> None:
        self.web.start()
        self.rerun.start()
        self.web.wait_for("ready.")
        self.rerun.wait_for("ready.")

    def log(self) -> str:
        return f"{self.web.log()}\n--- rerun worker ---\n{self.rerun.log()}"

    def kill(self) -> None:
        self.rerun.kill()
        self.web.kill()

    def stop(self) -> None:
        """The rerun worker first, which says it stops; then the web tier, once it has read what is left for it."""
        self.rerun.stop()
        self._drain_results()
        self.web.stop()

    def _drain_results(self, seconds: float = 10) -> None:
        import redis

        client = redis.Redis.from_url(self.broker)
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline and (client.llen(RESULTS_QUEUE) or client.hlen("unacked")):
                time.sleep(0.1)
        except redis.RedisError:
            pass  # the broker is down: nothing will be read anyway
        finally:
            client.close()


# Short periods, so the faults a test makes are noticed in seconds rather than minutes.
WORKER_SETTINGS = {
    "RERUN_HEARTBEAT_SECONDS": "0.5",
    "RERUN_STALE_AFTER_SECONDS": "4",
    "RERUN_RESEND_AFTER_SECONDS": "3",
    "RERUN_SWEEP_SECONDS": "1",
    "RERUN_RETRY_AFTER_SECONDS": "1",
    # A demo evaluation starts two sandboxes that each import torch, checks three rounds and calibrates its
    # blocks: 5 to 20 s on a loaded two-core machine, more beside a CPU burner.
    "RERUN_TIMEOUT_SECONDS": "120",
    "RERUN_MEMORY_MB": "1024",
    # CPU timings move with the machine's load, speedups over the reference too: at 2x the honest run
    # reproduces on a busy machine, while the "too fast" one is 20x off whatever the machine. The rule at
    # its real tolerance is tested in tests/records/test_rerun_rule.py, and beside a CPU burner in
    # test_demo_under_load.py.
    "RERUN_TOLERANCE": "1.0",
    "KERNELINDEX_HARDWARE_CLASS": "cpu",
}
# What a rerun worker keeps of the test's environment: what any process needs, and nothing of the site's.
RERUN_WORKER_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")


@pytest.fixture
def worker_settings() -> dict[str, str]:
    """The settings the `worker` fixture's processes get; a test module may override this fixture."""
    return WORKER_SETTINGS


@pytest.fixture
def worker(
    request: pytest.FixtureRequest,
    transactional_db: None,
    redis_server: RedisServer,
    tmp_path: Path,
    worker_settings: dict[str, str],
) -> Iterator[Worker]:
    """The web tier's worker on the test's database, broker and page cache (as the web tier's Redis user), and a
    rerun worker with the broker (as its class's Redis user) and a key registered in the test's database alone;
    started, stopped at the end. The test's own process sends the jobs (a moderator's request is sent once it
    commits) with the same settings."""
    site_settings = request.getfixturevalue("settings")
    for name, value in worker_settings.items():
        if hasattr(site_settings, name):
            setattr(site_settings, name, json.loads(value))  # every one of them a number
    inherited = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"}}
    environment = {
        **inherited,
        # As in the test's own process (tests/conftest.py): the tests that want the policy turn it on.
        "VERIFICATION_POLICY": "false",
        **worker_settings,
        "DATABASE_URL": database_url_of_this_test(),
        "CELERY_BROKER_URL": redis_server.url(0),
        "KERNELINDEX_VAR_DIR": str(tmp_path),
        # The site's one signing key: the jobs its sweep sends again are signed as this process's are.
        "SITE_KEY_FILE": str(settings.SITE_KEY_FILE),
    }
    cache = settings.CACHES["default"]
    if "redis" in cache["BACKEND"].lower():
        # The same cache and key prefix as this test, so the worker retires the pages this test reads.
        environment |= {"REDIS_URL": cache["LOCATION"], "CACHE_KEY_PREFIX": cache.get("KEY_PREFIX", "")}
    web_command = [sys.executable, "-m", "celery", "-A", "kernelindex", "worker", "-B", "--concurrency", "1"]
    web_command += ["--loglevel", "info", "--hostname", "web-{n}@%h", "--schedule", str(tmp_path / "beat-{n}")]
    web = Process("web", web_command, environment, tmp_path)
    key_file = tmp_path / "worker.key"
    key_file.write_text(create_worker_key("tests-cpu", [worker_settings["KERNELINDEX_HARDWARE_CLASS"]]).key_file)
    key_file.chmod(0o600)
    rerun_environment = {name: os.environ[name] for name in RERUN_WORKER_ENVIRONMENT if name in os.environ}
    rerun_environment |= {
        "KERNELINDEX_BROKER_URL": redis_server.worker_url(worker_settings["KERNELINDEX_HARDWARE_CLASS"]),
        "KERNELINDEX_HARDWARE_CLASS": worker_settings["KERNELINDEX_HARDWARE_CLASS"],
        "KERNELINDEX_WORKER_KEY_FILE": str(key_file),
        "RERUN_HEARTBEAT_SECONDS": worker_settings["RERUN_HEARTBEAT_SECONDS"],
    }
    rerun_command = [sys.executable, "-m", "harness.worker", "--hostname", "tests-{n}@%h", "--loglevel", "info"]
    workers = Worker(web, Process("rerun", rerun_command, rerun_environment, tmp_path), redis_server.url(0))
    workers.start()
    yield workers
    workers.stop()


def wait_for(request: RerunRequest, states: tuple[str, ...] | None = None, seconds: float = RERUN_WAIT_SECONDS) -> None:
    """Until the request is in one of `states` (default: finished, whatever its outcome)."""
    wanted = states or (RerunRequest.State.SUCCEEDED, RerunRequest.State.FAILED, RerunRequest.State.CANCELLED)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        request.refresh_from_db()
        if request.state in wanted:
            return
        time.sleep(0.2)
    said = f": {request.verdict_reason}" if request.verdict_reason else ""
    raise AssertionError(f"rerun #{request.pk} is still {request.state} after {seconds} s{said}")
