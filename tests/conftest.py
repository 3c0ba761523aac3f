"""Shared fixtures. Tests run on SQLite by default and on PostgreSQL when DATABASE_URL says so."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

SAMPLE_DATA = Path(__file__).parent / "data"
SEED_MANIFEST = Path(__file__).parent / "seed" / "run-01a0352b.manifest.json"


def data_pack() -> Path:
    """The full data pack when it is beside the checkout, else the sample shipped with the tests."""
    configured = os.environ.get("KERNELINDEX_DATA")
    if configured:
        return Path(configured)
    beside = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
    return beside if beside.is_dir() else SAMPLE_DATA


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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI a skipped test is a failure: everything must run against the real services."""
    if os.environ.get("CI") != "true":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped:
        reporter.write_line(f"CI: {len(skipped)} test(s) skipped; every test must run in CI", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
