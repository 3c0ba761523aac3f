"""The hostile cases the harness's test suite runs, and how each came out, recorded per harness version.

Every test that turns a hostile kernel on the harness is marked `hostile`. With
`--harness-suite-record FOLDER`, a pytest run writes what those tests found to
`FOLDER/<version>-<digest hex>.json` (records.harness_suites' format), so that the site's
page for a harness version lists the cases its own suite ran, as they came out,
and nothing written by hand. `make harness-suite` runs them all and records;
tests/harness/test_suite_record.py fails when the harness changed since the
last record, or the record and the suite's hostile tests part ways.

Loaded on every pytest run (pyproject.toml's addopts) so that the marker and the
option exist wherever the tests are collected.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness import HARNESS_NAME, HARNESS_VERSION, harness_digest
from records.harness_suites import (
    HELD,
    NOT_HELD,
    NOT_RUN,
    HarnessVersion,
    Outcome,
    RecordedCase,
    SuiteRecord,
    write_record,
)

MARKER = "hostile"
OPTION = "--harness-suite-record"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        metavar="FOLDER",
        default=None,
        help="write the outcomes of the tests marked hostile to FOLDER, one file per harness version",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: turns a hostile kernel on the harness (recorded per version)")
    folder = config.getoption(OPTION)
    if folder:
        config.pluginmanager.register(_Recorder(Path(folder)), "harness-suite-recorder")


@dataclass
class _Recorder:
    folder: Path
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if MARKER not in report.keywords:
            return
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration
        if report.failed:
            self.outcomes[report.nodeid] = NOT_HELD
        elif report.skipped:
            self.outcomes.setdefault(report.nodeid, NOT_RUN)
        elif report.when == "call":
            self.outcomes.setdefault(report.nodeid, HELD)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.outcomes:
            return
        cases = [
            RecordedCase.from_nodeid(nodeid, outcome, round(self.seconds[nodeid], 1))
            for nodeid, outcome in sorted(self.outcomes.items())
        ]
        digest = harness_digest()
        record = SuiteRecord(
            harness=HarnessVersion(name=HARNESS_NAME, version=HARNESS_VERSION, digest=digest),
            recordedAt=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            cases=cases,
        )
        path = write_record(self.folder, record)
        session.config.get_terminal_writer().line(f"harness suite: {len(cases)} hostile cases recorded in {path}")
