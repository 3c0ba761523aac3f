"""The demo's reruns on a loaded machine: a real worker at the real tolerance, beside a CPU burner.

An honest demo run must never end "not reproduced" because the machine is busy: its rerun either
reproduces it or says its time budget ran out undecided. The run reported twenty times too fast and the
wrong run reported as passed end "not reproduced" all the same.

The claims are made where they are rerun, as `make run` makes them: measured on this CPU, quiet, in its own
class (demo/local.py). The committed ones were measured on another CPU model, and a claim is judged only on the
hardware it was made on: on an Intel Xeon (family 6 model 167) the committed rmsnorm-vectorised's case 2 ran
2.4 times slower than it says, quiet, and beside the burners a rerun there refuted it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from harness.parent.environment import detect_hardware_class
from runs.models import Run
from tests.conftest import ImportRuns
from tests.runs.conftest import DEMO, ROOT, WORKER_SETTINGS, Worker, wait_for
from verification.models import RerunRequest

pytestmark = pytest.mark.django_db(transaction=True)

# The worker as an operator runs it: the settings' own tolerance (no RERUN_TOLERANCE), and one attempt per
# request, so that each verdict below is what a single rerun under load decided.
REAL_RULE_SETTINGS = {name: value for name, value in WORKER_SETTINGS.items() if name != "RERUN_TOLERANCE"}
REAL_RULE_SETTINGS["RERUN_MAX_ATTEMPTS"] = "1"
# Honest runs of three definitions, as their submitter measured them.
HONEST = ("rmsnorm-vectorised", "softmax-fused", "gemm-torch-mm")
NAMES = (*HONEST, "rmsnorm-row-loop", "softmax-exp2")
# Busy loops, one per core of the two-core machine CI runs on, bounded in case the test is killed.
BURNERS = 2
BURN_SECONDS = 600


@pytest.fixture
def measured_here(import_runs: ImportRuns, tmp_path: Path) -> Callable[[str], Run]:
    """The demo's runs of NAMES, their claims measured on this CPU and imported; a lookup by implementation name."""
    reported = tmp_path / "reported.jsonl"
    command = [sys.executable, "demo/local.py", "--out", str(reported), "--solutions", *NAMES]
    measured = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert measured.returncode == 0 and "measured on this CPU" in measured.stdout, measured.stdout + measured.stderr
    import_runs(DEMO / "definitions", DEMO / "solutions", reported)
    return lambda name: Run.objects.get(source="kernelindex", implementation_name=name, external_id__startswith="demo")


@pytest.fixture
def cpu_burner(measured_here: Callable[[str], Run]) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Busy loops, started once the claims are measured (quiet, as a submitter measures)."""
    code = f"import time\nend = time.monotonic() + {BURN_SECONDS}\nwhile time.monotonic() < end:\n    pass\n"
    burners = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(BURNERS)]
    yield burners
    for burner in burners:
        burner.kill()
        burner.wait(timeout=10)


@pytest.fixture
def worker_settings() -> dict[str, str]:
    return REAL_RULE_SETTINGS | {"KERNELINDEX_HARDWARE_CLASS": detect_hardware_class()}


def test_on_a_loaded_machine_honest_demo_runs_are_never_refuted_and_the_wrong_ones_are(
    client: Client,
    moderator: User,
    measured_here: Callable[[str], Run],
    cpu_burner: list[subprocess.Popen[bytes]],
    worker: Worker,
) -> None:
    client.force_login(moderator)
    requests = {}
    for name in NAMES:
        run = measured_here(name)
        assert client.post(f"/runs/{run.run_id}/rerun", {"reason": "tests"}).status_code == 302
        requests[name] = RerunRequest.objects.filter(run=run).latest("requested_at")
        # On the run's own class, this CPU's model's, which the worker serves: not the catch-all "cpu".
        assert requests[name].hardware == detect_hardware_class() != "cpu"
    started = time.monotonic()
    for request in requests.values():
        wait_for(request, seconds=300)
        request.refresh_from_db()
    assert all(burner.poll() is None for burner in cpu_burner), "the burners stopped before the reruns ended"
    said = {name: f"{r.state} {r.verdict or 'inconclusive'}: {r.verdict_reason}" for name, r in requests.items()}
    print(f"{len(NAMES)} reruns beside {BURNERS} burners in {time.monotonic() - started:.0f} s:", *said.items())

    for name in HONEST:
        request = requests[name]
        assert request.state == "succeeded", said[name] + worker.log()[-2000:]
        assert request.tolerance == 0.10
        assert request.verdict in {"reproduced", ""}, said[name]
        # The demo reports the reference's latencies beside its own, so the speedups are what is compared.
        assert "speedup over the reference" in request.verdict_reason
        if request.verdict == "":
            undecided = ("the time budget ran out before it decided", "spread between whole evaluations")
            assert any(words in request.verdict_reason for words in undecided), said[name]

    too_fast = requests["rmsnorm-row-loop"]
    assert (too_fast.state, too_fast.verdict) == ("succeeded", "not_reproduced"), said["rmsnorm-row-loop"]
    assert "geomean speedup over the reference" in too_fast.verdict_reason
    wrong = requests["softmax-exp2"]
    assert (wrong.state, wrong.verdict) == ("failed", "not_reproduced"), said["softmax-exp2"]
    assert "the kernel's outputs were wrong (INCORRECT_NUMERICAL)" in wrong.verdict_reason
