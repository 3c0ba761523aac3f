"""The evaluation's child process: `python -m harness.child JOB_DIR SCRATCH_DIR RESULT_FD`.

It runs inside the sandbox, imports torch, loads the reference and the
solution, and for each case builds the inputs, runs both, checks and times
them, and writes one JSON line per event to RESULT_FD as soon as it has it:
`environment`, then `start` and `case` for each case, or one `fatal` when the
reference or the solution cannot be loaded, then `done`. Whatever the solution
does to this process afterwards, lines already written stay with the parent.
The solution's own stdout goes to stderr, which the parent keeps as the log.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from harness.failures import failure_text

UNPRIVILEGED_ID = 65534
# Address space beyond the memory limit for what the runtime maps without using (thread stacks, arenas).
_ADDRESS_SPACE_SLACK_MB = 2048


class Reporter:
    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def send(self, event: str, **fields: Any) -> None:
        self.stream.write(json.dumps({"event": event, **fields}) + "\n")
        self.stream.flush()


def main(argv: list[str]) -> int:
    job_dir, scratch, result_fd = Path(argv[0]), Path(argv[1]), int(argv[2])
    job = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))
    reporter = Reporter(os.fdopen(result_fd, "w", encoding="utf-8"))
    if job["drop_privileges"]:
        os.setgroups([])
        os.setgid(UNPRIVILEGED_ID)
        os.setuid(UNPRIVILEGED_ID)
    os.dup2(2, 1)
    os.chdir(scratch)
    try:
        evaluate(job, job_dir, scratch, reporter)
    except Exception as error:
        reporter.send("fatal", status="RUNTIME_ERROR", reason="the harness child failed: " + failure_text(error))
        return 1
    reporter.send("done")
    return 0


def evaluate(job: Mapping[str, Any], job_dir: Path, scratch: Path, reporter: Reporter) -> None:
    # torch warns at import when numpy is absent, which the harness does not need: keep the log for the solution.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch

    # Before the solution is loaded: the timing module keeps the clocks as they are now.
    from harness.case import evaluate_case
    from harness.loading import LoadError, load_reference, load_solution

    device = job["device"]
    if device.startswith("cuda") and not torch.cuda.is_available():
        reporter.send(
            "fatal", status="RUNTIME_ERROR", reason=f"device {device} asked for, but torch sees no CUDA device"
        )
        return
    reporter.send("environment", **torch_environment(device))
    if not device.startswith("cuda") and job.get("memory_mb"):
        limit_address_space(job["memory_mb"])
    try:
        reference = load_reference(job_dir / job["reference_file"])
        reference_run = reference.run
        entrypoint = getattr(reference, job["custom_inputs_entrypoint"]) if job["custom_inputs_entrypoint"] else None
    except BaseException as error:
        reporter.send("fatal", status="INVALID_REFERENCE", reason="the reference did not load: " + failure_text(error))
        return
    try:
        solution = load_solution(job, device, scratch / "build")
    except LoadError as error:
        reporter.send("fatal", status=error.status, reason=error.reason)
        return
    except BaseException as error:
        reporter.send("fatal", status="COMPILE_ERROR", reason="the solution did not load: " + failure_text(error))
        return
    for case in job["cases"]:
        reporter.send("start", uuid=case["uuid"])
        reporter.send("case", **evaluate_case(case, job, reference_run, entrypoint, solution))


def torch_environment(device: str) -> dict[str, Any]:
    import platform
    from importlib import metadata

    import torch

    libraries: dict[str, str] = {"torch": str(torch.__version__)}
    for name in ("triton", "numpy"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            libraries[name] = metadata.version(name)
    environment: dict[str, Any] = {
        "libraries": libraries,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
    }
    if device.startswith("cuda"):
        index = torch.device(device).index or 0
        properties = torch.cuda.get_device_properties(index)
        environment.update(
            device_name=properties.name,
            compute_capability=f"sm_{properties.major}{properties.minor}",
            device_memory_mb=properties.total_memory // 2**20,
            multiprocessors=properties.multi_processor_count,
            l2_cache_mb=round(getattr(properties, "L2_cache_size", 0) / 2**20, 2),
            cudnn=torch.backends.cudnn.version(),  # type: ignore[no-untyped-call]
        )
    else:
        environment["device_name"] = "cpu"
        environment["cpu_threads"] = torch.get_num_threads()
    return environment


def limit_address_space(memory_mb: int) -> None:
    """Make an allocation far past the limit fail at once (the parent's watchdog catches gradual growth)."""
    mapped_kb = 0
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmSize:"):
                mapped_kb = int(line.split()[1])
    limit = mapped_kb * 1024 + (memory_mb + _ADDRESS_SPACE_SLACK_MB) * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
