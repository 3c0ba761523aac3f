"""Measures the demo's claims on this machine's CPU, so that the reruns a newcomer asks for here decide them.

`make run` runs it once, before it imports the demo:

    .venv/bin/python demo/local.py [--out var/demo/reported.jsonl] [--solutions NAME ...] [--committed]

A speedup over the reference moves between CPU models as it moves between GPUs (the demo's committed figures,
measured on an AMD EPYC, ran 1.5 times faster on an Intel Xeon with AVX-512), so a rerun judges a claim only on
the hardware class it was made on, and a CPU's class names its model (records/hardware.py). The committed runs
(demo/runs/reported.jsonl) name no model; this writes the same runs with figures measured here, in this CPU's
class, for the rerun worker `make run` starts beside the site:

- each honest solution is evaluated once with the options a rerun uses (demo/measure.py), and reported as
  measured: each case's latency, its reference's, and the median of the pairs' ratios;
- the run reported too fast (rmsnorm-row-loop) claims its own measured figures, TOO_FAST_FACTOR times better;
- the run reported passed though wrong (softmax-exp2) claims softmax-fused's measured figures at the ratio the
  committed figures give the two (the harness times no kernel that fails correctness);
- the runs reported failed are as committed.

It writes nothing new when the file was made on this CPU class from the same demo and harness (a stamp beside
it), so running `make run` again measures nothing. Where the harness cannot run here (no sandbox), it says so
and writes the committed runs instead: they import, and their reruns wait for a worker of the class "cpu".
`--committed` (make run DEMO_CLAIMS=committed) writes those and measures nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

DEMO = Path(__file__).resolve().parent
sys.path.insert(0, str(DEMO.parent))

from build import SOLUTIONS, TOO_FAST_FACTOR, Solution, environment, reported_runs  # noqa: E402
from measure import evaluation, figures  # noqa: E402

from harness import harness_digest  # noqa: E402
from harness.parent.environment import detect_hardware_class  # noqa: E402

# The site's own folder (settings.VAR_DIR), where make run keeps what it makes.
DEFAULT_OUT = Path(os.environ.get("KERNELINDEX_VAR_DIR") or DEMO.parent / "var") / "demo" / "reported.jsonl"
PASSED_THOUGH_WRONG = "passed though wrong"
# The run reported passed though wrong claims this solution's figures (build.py: its latencies are
# softmax-fused's at the ratio of the committed figures, its reference's softmax-fused's).
WRONG_MEASURED_AS = "softmax-fused"


def main() -> None:
    parser = argparse.ArgumentParser(description="Measure the demo's claims on this CPU (make run does, once).")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="default: var/demo/reported.jsonl")
    parser.add_argument("--solutions", nargs="*", help="only these solutions' runs (default: every one)")
    parser.add_argument(
        "--committed", action="store_true", help="write the committed runs (class cpu) and measure nothing"
    )
    arguments = parser.parse_args()
    chosen = tuple(s for s in SOLUTIONS if not arguments.solutions or s.name in arguments.solutions)
    if arguments.committed:
        arguments.out.parent.mkdir(parents=True, exist_ok=True)
        arguments.out.write_text(reported_runs(chosen))
        arguments.out.with_suffix(".stamp.json").unlink(missing_ok=True)
        print(f"Wrote the demo's {len(chosen)} committed runs (class cpu) to {arguments.out}.")
        return
    stamp = _stamp(chosen)
    stamp_file = arguments.out.with_suffix(".stamp.json")
    if arguments.out.is_file() and stamp_file.is_file() and json.loads(stamp_file.read_text()) == stamp:
        print(f"The demo's claims were measured on this CPU already ({arguments.out}).")
        return
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        text = measured_runs(chosen)
    except (subprocess.CalledProcessError, SystemExit) as failed:
        print(f"Could not measure the demo here ({failed}); writing its committed runs instead.", file=sys.stderr)
        arguments.out.write_text(reported_runs(chosen))
        stamp_file.unlink(missing_ok=True)
        return
    arguments.out.write_text(text)
    stamp_file.write_text(json.dumps(stamp, indent=2) + "\n")
    print(f"Wrote {len(chosen)} demo runs measured on this CPU ({stamp['class']}) to {arguments.out}.")


def measured_runs(chosen: tuple[Solution, ...]) -> str:
    """The chosen solutions' reported runs, with the figures one evaluation of each measures on this CPU."""
    measured: dict[str, Solution] = {}
    host: dict[str, Any] = {}
    wanted = {s.name for s in chosen} | ({WRONG_MEASURED_AS} if any(_wrong(s) for s in chosen) else set())
    for solution in SOLUTIONS:
        if solution.name not in wanted or solution.measured_ns is None or _wrong(solution):
            continue
        print(f"measuring {solution.name} on this CPU ...", flush=True)
        result = evaluation(solution)
        latencies, references, speedups = figures(result)
        measured[solution.name] = dataclasses.replace(
            solution, measured_ns=latencies, reference_ns=references, speedups=speedups
        )
        host = result.get("environment") or host
    solutions = tuple(measured.get(s.name) or _derived(s, measured) for s in chosen)
    hardware = dict(host.get("hardware") or {})
    libraries = {name: str(version) for name, version in (host.get("libraries") or {}).items() if version}
    if host.get("python"):
        libraries["python"] = str(host["python"])
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if not hardware:  # nothing was measured: only runs reported failed were chosen
        return reported_runs(solutions, observed_at=now)
    return reported_runs(solutions, environment(hardware, libraries), now)


def _derived(solution: Solution, measured: dict[str, Solution]) -> Solution:
    """A run whose figures are not its own measurement's: the one passed though wrong, from the solution it is
    reported as; a run reported failed, as committed."""
    if not _wrong(solution):
        return solution
    like, committed = measured[WRONG_MEASURED_AS], _committed(WRONG_MEASURED_AS)
    assert like.measured_ns is not None
    assert committed.measured_ns is not None
    assert solution.measured_ns is not None
    ratios = [own / theirs for own, theirs in zip(solution.measured_ns, committed.measured_ns, strict=True)]
    latencies = tuple(round(ns * ratio) for ns, ratio in zip(like.measured_ns, ratios, strict=True))
    return dataclasses.replace(solution, measured_ns=latencies, reference_ns=like.reference_ns)


def _wrong(solution: Solution) -> bool:
    return solution.reported == PASSED_THOUGH_WRONG


def _committed(name: str) -> Solution:
    return next(solution for solution in SOLUTIONS if solution.name == name)


def _stamp(chosen: tuple[Solution, ...]) -> dict[str, Any]:
    """What the file was made from: this CPU's class, the harness, and every demo file the runs are made of."""
    files = sorted(
        path
        for folder in (DEMO / "definitions", DEMO / "solutions")
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )
    demo = hashlib.sha256()
    for path in [*files, DEMO / "build.py", DEMO / "local.py", DEMO / "measure.py"]:
        demo.update(str(path.relative_to(DEMO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return {
        "class": detect_hardware_class(),
        "harness": harness_digest(),
        "demo": f"sha256:{demo.hexdigest()}",
        "solutions": [solution.name for solution in chosen],
        "tooFastFactor": TOO_FAST_FACTOR,
    }


if __name__ == "__main__":
    main()
