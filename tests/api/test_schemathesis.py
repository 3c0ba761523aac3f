"""Schemathesis, a property-based API tester, finds nothing wrong: the server does what its OpenAPI document says.

Its command line runs against a live server on the sample data, as anyone would run it: every check, every
phase (examples, coverage, fuzzing, and stateful sequences that follow the document's links), with a native
token and a rate limit that lets submissions reach the importer. Once with a fixed seed, so that a failure
can be reproduced, and once with a fresh one, so that each run tries new cases; each run prints its seed.
The runs here are short (SCHEMATHESIS_SECONDS, default 50 for each of three groups of phases, with a fresh
seed; the fixed seed's cases are the same each time, so half of that keeps them as a regression check and
leaves the time to new cases); the API page (docs/api.md) gives the longer run by hand.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from api.models import issue_token
from runs.models import Run
from runs.selectors import run_hardware_class
from tests.api.conftest import DEMO_MANIFESTS, ROOT
from tests.conftest import SEED_MANIFEST, ImportRuns
from verification.models import RerunRequest

FIXED_SEED = 26
SECONDS = int(os.environ.get("SCHEMATHESIS_SECONDS", "50"))

# The summary's count of test cases when none failed (with failures it says "found N unique failures").
ALL_PASSED = re.compile(r"^  (\d+) generated, (\d+) passed", re.MULTILINE)
# Fewer would mean it barely ran: a 50 s run on two cores makes several hundred.
FEWEST_CASES_A_SECOND = 3


# Each run is given its own phases and time: under one time limit for all four, a slow host spent it all on the
# coverage phase (50 s in CI), and the fuzzing and stateful phases never ran.
PHASE_RUNS = (("examples", "coverage"), ("fuzzing",), ("stateful",))


def schemathesis(
    url: str, secret: str, seed: int, folder: Path, phases: tuple[str, ...], seconds: int
) -> subprocess.CompletedProcess[str]:
    """`schemathesis run` as docs/api.md gives it, with this checkout's schemathesis.toml."""
    command = [
        *(sys.executable, "-m", "schemathesis.cli", "--config-file", str(ROOT / "schemathesis.toml"), "--no-color"),
        *("run", f"{url}/api/v1/openapi.json", "--checks", "all", "--phases", ",".join(phases)),
        *("--header", f"Authorization: Bearer {secret}", "--seed", str(seed), "--max-time", str(seconds)),
    ]
    # Its working folder is the test's: the examples it keeps between runs stay out of the checkout.
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=seconds + 120)


@pytest.fixture
def sample_index(import_runs: ImportRuns, sample: Path) -> None:
    """The sample data, the demo's runs and the seed, as `make setup` imports them, and a rerun to read."""
    import_runs(sample)
    import_runs(DEMO_MANIFESTS)
    import_runs(SEED_MANIFEST, redigest=True)
    run = Run.objects.get(external_id="demo/rmsnorm_h2048/rmsnorm-vectorised")
    # The row alone, as a moderator's request leaves it before a worker takes it (sent to no broker).
    RerunRequest.objects.create(run=run, run_digest=run.digest, hardware=run_hardware_class(run), reason="a check")


# `make test` runs this folder two tests at a time: the two runs one after the other on one worker, beside the
# other tests of its first part, so that each time-boxed run shares the CPU with one other test at most. Under
# `--dist loadgroup` pytest-xdist hands out the largest group first (its --loadscope-reorder, on by default), so
# the runs start at once and the other worker and then both take the single tests as each comes free.
@pytest.mark.xdist_group("schemathesis")
@pytest.mark.parametrize(
    ("seed", "seconds"),
    [(FIXED_SEED, max(1, SECONDS // 2)), (random.randrange(2**31), SECONDS)],
    ids=["fixed-seed", "fresh-seed"],
)
def test_schemathesis_finds_no_failure(
    live_server: Any, transactional_db: None, sample_index: None, settings: Any, tmp_path: Path, seed: int, seconds: int
) -> None:
    settings.API_SUBMISSIONS_PER_HOUR = 1_000_000
    _, secret = issue_token("schemathesis")
    operations = sum(len(items) for items in Client().get("/api/v1/openapi.json").json()["paths"].values())

    cases = 0
    for phases in PHASE_RUNS:
        result = schemathesis(live_server.url, secret, seed, tmp_path, phases, seconds)

        said = f"seed {seed}, {phases}:\n{result.stdout[-12000:]}\n{result.stderr[-3000:]}"
        assert result.returncode == 0, said
        assert f"Operations:       {operations} selected / {operations} total" in result.stdout, said
        last = phases[-1].capitalize()
        assert f"✅ {last}" in result.stdout, said
        counted = ALL_PASSED.search(result.stdout)
        assert counted is not None and counted[1] == counted[2], said
        cases += int(counted[1])
    assert cases >= FEWEST_CASES_A_SECOND * seconds, f"{cases} cases in {len(PHASE_RUNS)} runs of {seconds} s"
