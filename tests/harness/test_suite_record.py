"""Each harness version's record of its hostile cases comes from its own test suite, and is kept current.

The record (records/harness_suites.py) is what the site's page for a harness version lists. It is written by
`make harness-suite` (tests/harness/suite_record.py); these tests fail when the harness changed and nobody recorded
its suite again, or when the suite's hostile tests and the record part ways.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness import HARNESS_VERSION, harness_digest
from records.harness_suites import HELD, NOT_HELD, NOT_RUN, SUITES_FOLDER, SuiteRecordError, read_record

ROOT = Path(__file__).resolve().parent.parent.parent
RECORD_AGAIN = "run `make harness-suite` and commit harness/suites/"


def run_pytest(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *arguments]
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=300, check=False)


def current_record_path() -> Path:
    return SUITES_FOLDER / f"{HARNESS_VERSION}-{harness_digest().removeprefix('sha256:')}.json"


def test_the_current_harness_has_a_record_of_its_suite_in_which_every_hostile_case_held() -> None:
    path = current_record_path()
    assert path.exists(), f"no record of this harness's hostile cases ({path.name}): {RECORD_AGAIN}"
    record = read_record(path)
    broken = [case.test for case in record.cases if case.outcome != HELD]
    assert not broken, f"the record says these did not hold: {broken}"


def test_the_record_lists_exactly_the_hostile_tests_the_suite_runs() -> None:
    collected = run_pytest("--collect-only", "-q", "-m", "hostile", "tests/harness")
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
    suite = {line for line in collected.stdout.splitlines() if "::" in line}
    path = current_record_path()
    recorded = {case.test for case in read_record(path).cases} if path.exists() else set()

    assert suite, collected.stdout
    differences = f"only in the suite: {suite - recorded}; only recorded: {recorded - suite}"
    assert recorded == suite, f"{RECORD_AGAIN}; {differences}"


def test_a_run_with_the_option_records_what_each_hostile_test_found(tmp_path: Path) -> None:
    (tmp_path / "test_attacks.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.hostile
            @pytest.mark.parametrize("attack", ["forged lines", "patched timer"])
            def test_an_attack_fails(attack):
                assert attack != "patched timer"

            @pytest.mark.hostile
            def test_a_skipped_attack():
                pytest.skip("no sandbox")

            def test_not_an_attack():
                pass
            """
        )
    )

    run = run_pytest("-p", "tests.harness.suite_record", "--harness-suite-record", "records", "-q", cwd=tmp_path)

    assert run.returncode == 1, run.stdout[-2000:]  # the patched timer "got through"
    (path,) = (tmp_path / "records").iterdir()
    assert path.name == f"{HARNESS_VERSION}-{harness_digest().removeprefix('sha256:')}.json"
    record = read_record(path)
    found = {(case.attack, case.checks): case.outcome for case in record.cases}
    assert found == {
        ("forged lines", "an attack fails"): HELD,
        ("patched timer", "an attack fails"): NOT_HELD,
        ("", "a skipped attack"): NOT_RUN,
    }
    assert record.harness.digest == harness_digest()


def test_a_record_that_does_not_read_is_refused_naming_the_file_and_the_field(tmp_path: Path) -> None:
    path = current_record_path()
    written = tmp_path / path.name
    written.write_text(json.dumps({"harness": {"name": "x", "version": HARNESS_VERSION, "digest": "sha256:zz"}}))

    with pytest.raises(SuiteRecordError, match=rf"{written.name}: harness\.digest"):
        read_record(written)


def test_a_record_under_another_versions_name_is_refused(tmp_path: Path) -> None:
    harness = {"name": "x", "version": "9.9.9", "digest": "sha256:" + "0" * 64}
    record = {"harness": harness, "recordedAt": "", "cases": []}
    path = tmp_path / current_record_path().name
    path.write_text(json.dumps(record))

    with pytest.raises(SuiteRecordError, match="does not match"):
        read_record(path)
