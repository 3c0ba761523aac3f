"""The judge: `python -m harness.judge JOB_DIR SCRATCH DESCRIPTORS`.

It runs in a sandbox of its own, apart from the two processes it serves
requests to (the kernel's and the reference's, each in a sandbox and a cgroup
of its own), and does everything a verdict rests on: it loads the reference
to check outputs against, builds every input, writes the inputs into each
side's exchange, measures every request itself (the group's CPU time, its own
wall clock) with the other side frozen, checks what it finds in the exchange,
and sends each case's result to the parent on a pipe neither served process
holds.

Events to the parent, one JSON line each: `environment`; `start` and `case`
for each case; one `fatal` when the reference or the solution cannot be
loaded; then `done`.
"""

from __future__ import annotations

import json
import os
import sys
import types
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from harness.judge.environment import torch_environment
from harness.wire.failures import failure_text
from harness.wire.privileges import drop_privileges
from harness.wire.timing_names import JUDGE_CPU_TIME, JUDGE_LATENCY, JUDGE_WALL_CLOCK

if TYPE_CHECKING:
    from harness.judge.served import EmptyCost, ServedLink


class Reporter:
    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def send(self, event: str, **fields: Any) -> None:
        self.stream.write(json.dumps({"event": event, **fields}) + "\n")
        self.stream.flush()


def main(argv: list[str]) -> int:
    job_dir, scratch, descriptors = Path(argv[0]), Path(argv[1]), json.loads(argv[2])
    job = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))
    reporter = Reporter(os.fdopen(descriptors["results"], "w", encoding="utf-8"))
    if job["drop_privileges"]:
        drop_privileges()
    os.dup2(2, 1)
    os.chdir(scratch)
    try:
        judge(job, job_dir, reporter, descriptors)
    except Exception as error:
        reporter.send("fatal", status="HARNESS_ERROR", reason="the judge failed: " + failure_text(error))
        return 1
    reporter.send("done")
    return 0


def judge(job: Mapping[str, Any], job_dir: Path, reporter: Reporter, descriptors: Mapping[str, Any]) -> None:
    # torch warns at import when numpy is absent, which the harness does not need.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch

    from harness.judge.served import KernelFault, ServedLink

    device = job["device"]
    if device.startswith("cuda") and not torch.cuda.is_available():
        reporter.send(
            "fatal", status="HARNESS_ERROR", reason=f"device {device} asked for, but torch sees no CUDA device"
        )
        return
    reporter.send("environment", **torch_environment(device))
    try:
        reference = load_reference(job_dir / job["reference_file"])
        reference_run = reference.run
        entrypoint = getattr(reference, job["custom_inputs_entrypoint"]) if job["custom_inputs_entrypoint"] else None
    except BaseException as error:
        reporter.send("fatal", status="INVALID_REFERENCE", reason="the reference did not load: " + failure_text(error))
        return
    try:
        kernel = ServedLink.of(descriptors["kernel"], bool(job["solution"]["dps"]))
        served_reference = ServedLink.of(descriptors["reference"], False)
    except KernelFault as fault:
        reporter.send("fatal", status="HARNESS_ERROR", reason=f"starting the served processes: {fault.reason}")
        return
    try:
        _judge_served(job, reporter, reference_run, entrypoint, kernel, served_reference)
    finally:
        # Thawed and told to exit however the judging ended: a frozen process takes no signal, SIGKILL included,
        # and the evaluation's parent would wait seconds for a served process that failed to load to die.
        kernel.exit()
        served_reference.exit()


def _judge_served(
    job: Mapping[str, Any],
    reporter: Reporter,
    reference_run: Any,
    entrypoint: Any,
    kernel: ServedLink,
    served_reference: ServedLink,
) -> None:
    """The served processes calibrated, the solution and the reference loaded, then every case judged."""
    from harness.judge.case import CaseJudge
    from harness.judge.served import KernelFault

    device = job["device"]
    try:
        # Before anything is loaded, each side's own cost of a request, which nothing of the solution's inflates:
        # a fault here is the harness's own.
        overheads = {case["uuid"]: _calibrated(kernel, served_reference, case, job) for case in job["cases"]}
    except KernelFault as fault:
        reporter.send("fatal", status="HARNESS_ERROR", reason=f"calibrating the served processes: {fault.reason}")
        return
    try:
        failed = kernel.load()
    except KernelFault as fault:
        reporter.send("fatal", status=fault.status, reason=f"loading the solution: {fault.reason}")
        return
    if failed is not None:
        reporter.send("fatal", status=failed[0], reason=failed[1])
        return
    try:
        refused = served_reference.load()
    except KernelFault as fault:
        refused = ["INVALID_REFERENCE", fault.reason]
    if refused is not None:
        reporter.send("fatal", status="INVALID_REFERENCE", reason=f"serving the reference: {refused[1]}")
        return
    # What decides the figures: the judge's own measure of each request, never the kernel's clock.
    cpu_time = kernel.metered and not device.startswith("cuda")
    latency = cpu_time and kernel.run_delay is not None and served_reference.run_delay is not None
    reporter.send("timer", name=JUDGE_LATENCY if latency else JUDGE_CPU_TIME if cpu_time else JUDGE_WALL_CLOCK)
    for case in job["cases"]:
        reporter.send("start", uuid=case["uuid"])
        judged = CaseJudge(job, case, reference_run, entrypoint, kernel, served_reference, overheads[case["uuid"]])
        result = judged.run()
        reporter.send("case", **result)
        if result.get("stop"):
            return


def load_reference(path: Path) -> types.ModuleType:
    """The reference module, executed from its file so that tracebacks show its lines."""
    module = types.ModuleType("kernelindex_reference")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


def _calibrated(
    kernel: ServedLink, reference: ServedLink, case: Mapping[str, Any], job: Mapping[str, Any]
) -> dict[str, EmptyCost]:
    from harness.judge.served import block_size, calibrate

    size = block_size(kernel, case)
    return calibrate(kernel, reference, case, size, probe=str(job["device"]).startswith("cuda"))
