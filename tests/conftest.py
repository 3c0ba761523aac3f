"""Shared fixtures. Tests run on SQLite by default and on PostgreSQL when DATABASE_URL says so."""

from __future__ import annotations

import io
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connections

SAMPLE_DATA = Path(__file__).parent / "data"
SEED_MANIFEST = Path(__file__).parent / "seed" / "run-01a0352b.manifest.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Debian's Chromium, headless, never reaching out to the network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def data_pack() -> Path:
    """The full data pack when it is beside the checkout, else the sample shipped with the tests."""
    configured = os.environ.get("KERNELINDEX_DATA")
    if configured:
        return Path(configured)
    beside = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
    return beside if beside.is_dir() else SAMPLE_DATA


@pytest.fixture(autouse=True)
def clean_cache(settings: Any, tmp_path: Path) -> Iterator[None]:
    """The configured cache backend (file, or Redis when REDIS_URL is set), empty for each test, caching pages.

    Each test's database starts empty, and cached pages and the rate limiter's counts
    must start with it. The file cache moves to the test's own folder; on Redis a fresh
    key prefix keeps tests apart without flushing a database something else may share.
    """
    default = dict(settings.CACHES["default"])
    if default["BACKEND"].endswith("FileBasedCache"):
        default["LOCATION"] = str(tmp_path / "cache")
    else:
        default["KEY_PREFIX"] = f"test-{uuid.uuid4().hex}"
    settings.CACHES = {"default": default}
    # Pages are cached as in production (development turns the page cache off).
    settings.PAGE_CACHE_SECONDS = 3600
    yield
    cache.close()


@pytest.fixture(autouse=True)
def verification_policy_off(settings: Any) -> None:
    """The verification policy (verification/policy.py) queues reruns by itself: off, so that tests count only the
    reruns they ask for. tests/runs/test_verification_policy.py turns it on."""
    settings.VERIFICATION_POLICY = False


@pytest.fixture
def sample() -> Path:
    return SAMPLE_DATA


ImportRuns = Callable[..., str]


@pytest.fixture
def import_runs(db: None) -> ImportRuns:
    """Run `import_runs` and return what it printed.

    With fails=True the command must fail, and its message is returned too.
    """

    def run(*paths: Path | str, fails: bool = False, **options: object) -> str:
        out, err = io.StringIO(), io.StringIO()
        try:
            call_command("import_runs", *[str(p) for p in paths], stdout=out, stderr=err, **options)
        except CommandError as error:
            if not fails:
                raise
            return out.getvalue() + err.getvalue() + str(error)
        if fails:
            pytest.fail("the import was expected to fail")
        return out.getvalue() + err.getvalue()

    return run


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium for the browser tests of one module (a playwright Browser)."""
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        # Playwright's sync API runs an event loop in this thread; the ORM calls of the tests are still synchronous.
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
    # Queries made while Playwright ran hold connections pytest-django never closes; on PostgreSQL they
    # would block dropping the test database.
    connections.close_all()


@pytest.fixture
def run(import_runs: ImportRuns, sample: Path) -> Any:
    """A real imported run: the fastest passed SOL-ExecBench submission of the sample (a runs.models.Run)."""
    from runs.models import Run

    import_runs(sample / "sol-execbench" / "submissions.jsonl")
    found = Run.objects.filter(status="passed").select_related("group").order_by("latency_ns").first()
    assert found is not None
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI a skipped test is a failure: everything must run against the real services."""
    if os.environ.get("CI") != "true":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped:
        reporter.write_line(f"CI: {len(skipped)} test(s) skipped; every test must run in CI", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
