"""`evaluate`: check the files, run the child in its sandbox, and assemble the result."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.environment import host_environment
from harness.errors import HarnessInputError
from harness.formats import load_definition, load_solution, load_workload
from harness.job import Inputs, build_job
from harness.protocols import DEFAULT_PROTOCOL
from harness.results import CaseResult, EvaluationResult, HarnessInfo, Protocol
from harness.sandbox import UNPRIVILEGED_ID, Outcome, SandboxUnavailableError, Workspace, child_command, run_child
from harness.stats import latency_of, suite_latency
from harness.timing_names import CPU_FLUSH, CPU_TIMER, CUDA_FLUSH, CUDA_TIMER

DEFAULT_TIMEOUT = 300.0
DEFAULT_MEMORY_MB = 8192
DEFAULT_SCRATCH_MB = 1024
UNSANDBOXED_VARIABLE = "KERNELINDEX_HARNESS_UNSANDBOXED"
_DEVICE = re.compile(r"cpu|cuda(:\d+)?")


def evaluate(
    definition: Path,
    workload: Path,
    solution: Path,
    *,
    reference: Path | None = None,
    device: str = "cpu",
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: int | None = DEFAULT_MEMORY_MB,
    sandbox: bool = True,
    warmup: int = 10,
    iterations: int = 50,
    data_root: Path | None = None,
    protocol: str = DEFAULT_PROTOCOL,
    scratch_mb: int = DEFAULT_SCRATCH_MB,
) -> EvaluationResult:
    """Evaluate a solution on every case of a workload; raises HarnessInputError for unusable arguments or files."""
    _check_options(device, timeout, memory_mb, warmup, iterations)
    if os.environ.get(UNSANDBOXED_VARIABLE) == "1":
        sandbox = False
    inputs = read_inputs(Path(definition), Path(workload), Path(solution), reference)
    root = Path(tempfile.mkdtemp(prefix="kernelindex-harness-"))
    try:
        workspace = _workspace(root, inputs, sandbox)
        outcome = _run(workspace, inputs, device, timeout, memory_mb, warmup, iterations, data_root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return assemble(inputs, outcome, device, warmup, iterations)


def read_inputs(definition: Path, workload: Path, solution: Path, reference: Path | None) -> Inputs:
    definition_path, parsed, reference_source, reference_name = load_definition(definition, reference)
    return Inputs(
        definition_path=definition_path,
        definition=parsed,
        reference_source=reference_source,
        reference_name=reference_name,
        workload_path=workload,
        cases=load_workload(workload, parsed),
        solution=load_solution(solution, parsed),
    )


def _check_options(device: str, timeout: float, memory_mb: int | None, warmup: int, iterations: int) -> None:
    if not _DEVICE.fullmatch(device):
        raise HarnessInputError("--device", None, None, f"expected cpu, cuda or cuda:N, not {device!r}")
    if timeout <= 0:
        raise HarnessInputError("--timeout", None, None, "must be more than 0 seconds")
    if memory_mb is not None and memory_mb <= 0:
        raise HarnessInputError("--memory-mb", None, None, "must be more than 0")
    if warmup < 0 or iterations < 1:
        raise HarnessInputError("--iterations", None, None, "need at least 1 timed iteration and no negative warm-up")


def _workspace(root: Path, inputs: Inputs, sandboxed: bool) -> Workspace:
    job, scratch = root / "job", root / "scratch"
    sources = job / "solution"
    sources.mkdir(parents=True)
    scratch.mkdir()
    (job / inputs.reference_name).write_text(inputs.reference_source, encoding="utf-8")
    for source in inputs.solution.sources:
        target = sources / source.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source.content, encoding="utf-8")
    # The unprivileged child must read the job and own the scratch folder.
    root.chmod(0o755)
    for path in [job, *job.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    if os.geteuid() == 0 and sandboxed:
        os.chown(scratch, UNPRIVILEGED_ID, UNPRIVILEGED_ID)
    return Workspace(job=job, scratch=scratch, sandboxed=sandboxed)


def _run(
    workspace: Workspace,
    inputs: Inputs,
    device: str,
    timeout: float,
    memory_mb: int | None,
    warmup: int,
    iterations: int,
    data_root: Path | None,
) -> Outcome:
    copied: dict[Path, str] = {}

    def child_path_of(host: Path) -> str:
        # Copied into the job (data files are small: indices, lengths), so the unprivileged child can read them.
        if host not in copied:
            name = f"{len(copied)}{host.suffix}"
            (workspace.job / "data").mkdir(mode=0o755, exist_ok=True)
            shutil.copyfile(host, workspace.job / "data" / name)
            (workspace.job / "data" / name).chmod(0o644)
            copied[host] = str(workspace.child_job() / "data" / name)
        return copied[host]

    options = {
        "device": device,
        "warmup": warmup,
        "iterations": iterations,
        "memory_mb": memory_mb,
        "drop_privileges": workspace.sandboxed and os.geteuid() == 0,
    }
    job, _ = build_job(inputs, options, data_root, child_path_of)
    job["solution"]["dir"] = str(workspace.child_job() / "solution")
    (workspace.job / "job.json").write_text(json.dumps(job), encoding="utf-8")
    (workspace.job / "job.json").chmod(0o644)
    return run_child(lambda fd: child_command(workspace, device, fd), workspace.scratch, timeout, memory_mb)


def assemble(inputs: Inputs, outcome: Outcome, device: str, warmup: int, iterations: int) -> EvaluationResult:
    cases = _case_results(inputs, outcome)
    status, reason = _overall(cases, outcome)
    all_passed = all(case.status == "PASSED" for case in cases)
    cuda = device.startswith("cuda")
    return EvaluationResult.model_validate(
        {
            "status": status,
            "reason": reason,
            "definition": inputs.definition.name,
            "solution": inputs.solution.name,
            "device": device,
            "cases": cases,
            "latency": suite_latency([c.latency for c in cases if c.latency]) if all_passed else None,
            "reference_latency": suite_latency([c.reference_latency for c in cases if c.reference_latency])
            if all_passed
            else None,
            "protocol": Protocol(
                warmup=warmup,
                iterations=iterations,
                timer=CUDA_TIMER if cuda else CPU_TIMER,
                l2_flush=CUDA_FLUSH if cuda else CPU_FLUSH,
            ),
            "environment": {**host_environment(device), **outcome.environment},
            "harness": _harness_info(),
            "log_tail": outcome.log_tail,
        }
    )


def _case_results(inputs: Inputs, outcome: Outcome) -> list[CaseResult]:
    results = []
    stopped_at: str | None = None
    for _, case in inputs.cases:
        reported = outcome.cases.get(case.uuid)
        if reported is not None:
            results.append(_reported_case(reported))
        elif outcome.fatal is not None:
            results.append(_reported_case({"uuid": case.uuid, "status": outcome.fatal[0], "reason": outcome.fatal[1]}))
        elif stopped_at is None:
            stopped_at = case.uuid
            stop = {"uuid": case.uuid, "status": _stop_status(outcome), "reason": _stop_reason(outcome)}
            results.append(_reported_case(stop))
        else:
            reason = f"not run: the evaluation stopped at case {stopped_at}"
            results.append(CaseResult(uuid=case.uuid, status="NOT_RUN", reason=reason))
    return results


def _reported_case(reported: dict[str, Any]) -> CaseResult:
    """A case as the child reported it; what does not read as a result is a RUNTIME_ERROR, not a crash."""
    fields = dict(reported)
    samples = fields.pop("samples", None)
    reference_samples = fields.pop("reference_samples", None)
    try:
        return CaseResult.model_validate(
            {
                **fields,
                "latency": latency_of(samples) if samples else None,
                "reference_latency": latency_of(reference_samples) if reference_samples else None,
            }
        )
    except (ValidationError, TypeError, ValueError):
        reason = "the evaluation process reported a result that does not read as one"
        return CaseResult(uuid=str(reported.get("uuid")), status="RUNTIME_ERROR", reason=reason)


def _stop_status(outcome: Outcome) -> str:
    return outcome.stopped[0] if outcome.stopped else "RUNTIME_ERROR"


def _stop_reason(outcome: Outcome) -> str:
    if outcome.stopped:
        return outcome.stopped[1]
    code = outcome.returncode or 0
    # bwrap reports a child's death by signal N as the exit status 128 + N.
    signal_number = -code if code < 0 else code - 128 if code > 128 else 0
    how = f"was killed by signal {signal_number}" if signal_number else f"exited with status {code}"
    last = outcome.log_tail.strip().splitlines()[-5:]
    return f"the evaluation process {how} during this case" + (": " + "\n".join(last) if last else "")


def _overall(cases: list[CaseResult], outcome: Outcome) -> tuple[str, str | None]:
    if outcome.fatal is not None:
        # The cases carry the fatal status as validated; an unknown one reads as RUNTIME_ERROR there.
        return cases[0].status, outcome.fatal[1]
    if outcome.stopped is not None:
        return outcome.stopped
    if not outcome.environment:
        # The child never got as far as torch: the sandbox or the interpreter did not start.
        return "RUNTIME_ERROR", "the evaluation process did not start: " + outcome.log_tail.strip()[-1000:]
    for case in cases:
        if case.status != "PASSED":
            return case.status, f"case {case.uuid}: {case.reason}"
    return "PASSED", None


def _harness_info() -> HarnessInfo:
    from harness import HARNESS_NAME, HARNESS_VERSION, harness_digest

    return HarnessInfo(name=HARNESS_NAME, version=HARNESS_VERSION, digest=harness_digest())


__all__ = ["DEFAULT_MEMORY_MB", "DEFAULT_TIMEOUT", "SandboxUnavailableError", "evaluate"]
