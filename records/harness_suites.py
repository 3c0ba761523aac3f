"""What each harness version's own test suite found when hostile kernels were turned on it.

A record is written by the test suite itself (tests/harness/suite_record.py, through `make harness-suite`), one
JSON file per harness version under harness/suites/, named `<version>-<digest hex>.json`, and never by hand:
tests/harness/test_suite_record.py fails when the current harness has no record, or when its record and the suite's
hostile tests part ways. The site's page for a harness version (the version that judged a rerun) lists these cases.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from records.canonical import DIGEST_PATTERN
from records.schema import HARNESS_VERSION_MAX_LENGTH

SUITES_FOLDER = Path(__file__).resolve().parent.parent / "harness" / "suites"

HELD = "held"  # the test passed: the attack failed, or gained nothing
NOT_HELD = "not held"  # the test failed: the attack got through, or the defence could not be shown
NOT_RUN = "not run"  # skipped
Outcome = Literal["held", "not held", "not run"]


class SuiteRecordError(ValueError):
    """A record that cannot be read; the message names the file and the field."""


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HarnessVersion(_Closed):
    name: str = Field(max_length=100)
    version: str = Field(max_length=HARNESS_VERSION_MAX_LENGTH)
    digest: str = Field(pattern=f"^{DIGEST_PATTERN.pattern}$")


class RecordedCase(_Closed):
    test: str = Field(max_length=500)  # pytest's node id: the file, the test, and the attack's id where it has one
    attack: str = Field(max_length=200)  # the parametrised attack's name, '' for a test of one attack
    checks: str = Field(max_length=300)  # what the test asserts, in its own words (its name)
    outcome: Outcome
    seconds: float = Field(ge=0)

    @classmethod
    def from_nodeid(cls, nodeid: str, outcome: Outcome, seconds: float) -> RecordedCase:
        function, _, attack = nodeid.rpartition("::")[2].partition("[")
        checks = function.removeprefix("test_").replace("_", " ")
        return cls(test=nodeid, attack=attack.removesuffix("]"), checks=checks, outcome=outcome, seconds=seconds)


class SuiteRecord(_Closed):
    harness: HarnessVersion
    recordedAt: str = Field(max_length=40)  # noqa: N815 (the JSON's spelling)
    cases: list[RecordedCase]

    @property
    def held(self) -> int:
        return sum(case.outcome == HELD for case in self.cases)


def record_path(folder: Path, version: str, digest: str) -> Path:
    return folder / f"{_slug(version)}-{digest.removeprefix('sha256:')}.json"


def _slug(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z.]+", "-", text).strip("-") or "unversioned"


def write_record(folder: Path, record: SuiteRecord) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = record_path(folder, record.harness.version, record.harness.digest)
    path.write_text(json.dumps(record.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")
    return path


def read_record(path: Path) -> SuiteRecord:
    try:
        record = SuiteRecord.model_validate_json(path.read_bytes())
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(the file)"
        raise SuiteRecordError(f"{path}: {where}: {first['msg']}") from None
    if path.name != record_path(path.parent, record.harness.version, record.harness.digest).name:
        raise SuiteRecordError(f"{path}: the file's name does not match harness.version and harness.digest")
    return record


def recorded_suites(folder: Path | None = None) -> dict[str, SuiteRecord]:
    """Every record in the folder (harness/suites/ by default), by harness digest."""
    return _records_in(folder or SUITES_FOLDER)


@cache
def _records_in(folder: Path) -> dict[str, SuiteRecord]:
    # Read once per process and folder: the files ship with the code.
    records = (read_record(path) for path in sorted(folder.glob("*.json")))
    return {record.harness.digest: record for record in records}
