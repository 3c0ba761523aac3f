"""`evaluate`: check the files, run the judge and the kernel in their sandboxes, and assemble the result."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.jail.sandbox import Limits, Outcome, SandboxUnavailableError, Workspace, allowed_cpus, run_evaluation
from harness.judge.protocols import DEFAULT_PROTOCOL, protocol_named
from harness.parent.environment import host_environment
from harness.parent.formats import Solution, load_definition, load_solution, load_workload
from harness.parent.job import Inputs, build_job, solution_entry
from harness.parent.options import (
    DEFAULT_CASE_BUDGET,
    DEFAULT_MEMORY_MB,
    DEFAULT_SCRATCH_MB,
    DEFAULT_TIMEOUT,
    EvaluationOptions,
)
from harness.parent.results import CaseResult, EvaluationResult, HarnessInfo, Protocol
from harness.parent.stats import MAX_PAIRS, latency_of, ratio_speedup, suite_latency, suite_speedup
from harness.wire.exchange import exchange_bytes
from harness.wire.timing_names import CPU_FLUSH, CPU_TIMER, CUDA_FLUSH, CUDA_TIMER

# Statuses that blame the evaluation, not the kernel, until a control evaluation says otherwise.
EVALUATION_FAULTS = frozenset({"HARNESS_ERROR", "INVALID_REFERENCE"})
# Limits a kernel breaches, which are its own only where the reference as the solution passed within them: a
# definition whose reference needs more time or memory than this host gives is the host's problem, and a kernel as
# good as the reference must not be convicted of it.
LIMIT_STATUSES = frozenset({"TIMEOUT", "OUT_OF_MEMORY"})
# A timeout is the kernel's only where the control finished within this share of the limit: a control that needed
# most of it says the host is too slow for the definition, and a kernel as fast as the reference would time out or
# not by the host's load alone.
CONTROL_SHARE = 0.5


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
    warmup: int | None = None,
    iterations: int | None = None,
    data_root: Path | None = None,
    protocol: str = DEFAULT_PROTOCOL,
    scratch_mb: int = DEFAULT_SCRATCH_MB,
    fresh_inputs: bool = False,
    precision: float | None = None,
    case_budget: float = DEFAULT_CASE_BUDGET,
) -> EvaluationResult:
    """`evaluate_with` for options given as keywords (EvaluationOptions says what each does); raises
    HarnessInputError for unusable options or files."""
    options = EvaluationOptions(
        reference=reference,
        device=device,
        timeout=timeout,
        memory_mb=memory_mb,
        sandbox=sandbox,
        warmup=warmup,
        iterations=iterations,
        data_root=data_root,
        protocol=protocol,
        scratch_mb=scratch_mb,
        fresh_inputs=fresh_inputs,
        precision=precision,
        case_budget=case_budget,
    )
    return evaluate_with(definition, workload, solution, options)


def evaluate_with(definition: Path, workload: Path, solution: Path, options: EvaluationOptions) -> EvaluationResult:
    """Evaluate a solution on every case of a workload; raises HarnessInputError for unusable files.

    An evaluation fault or a breached limit is tried again with the reference as the solution (the control),
    which says whose it is."""
    inputs = read_inputs(Path(definition), Path(workload), Path(solution), options.reference)
    result = _evaluate(inputs, options)
    if result.status in EVALUATION_FAULTS | LIMIT_STATUSES and _is_the_reference(inputs, options.protocol):
        # The control would run this very evaluation again: its answer is the one already here.
        return _its_own_control(result)
    if result.status in EVALUATION_FAULTS | LIMIT_STATUSES:
        control_options = _control_options(result, options)
        started = time.monotonic()
        control = _evaluate(_reference_as_solution(inputs, options.protocol), control_options)
        control_share = (time.monotonic() - started) / options.timeout
        result = _attributed(result, control, control_share, control_options.timeout)
    return result


def _control_options(result: EvaluationResult, options: EvaluationOptions) -> EvaluationOptions:
    """The options of the control evaluation: the same, except after a timeout, where a control that has not
    passed within `CONTROL_SHARE` of the time cannot make the timeout the kernel's; it stops there, so that a
    definition this host cannot judge is reported as such that much sooner."""
    if result.status != "TIMEOUT":
        return options
    return replace(options, timeout=CONTROL_SHARE * options.timeout)


def _evaluate(inputs: Inputs, options: EvaluationOptions) -> EvaluationResult:
    root = Path(tempfile.mkdtemp(prefix="kernelindex-harness-"))
    try:
        workspace = _workspace(root, inputs, options.sandboxed)
        outcome = _run(workspace, inputs, options)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return assemble(inputs, outcome, options)


def _language_refused(inputs: Inputs, protocol: str) -> str | None:
    """Why the protocol's source would not run this solution, if it would not: a language it does not take."""
    known = protocol_named(protocol)
    foreign = [name for name in inputs.solution.spec.language_names if name not in known.languages]
    if not foreign:
        return None
    return (
        f"the {protocol} protocol takes no {', '.join(foreign)} solution "
        f"(it takes {', '.join(sorted(known.languages))})"
    )


def _reference_as_solution(inputs: Inputs, protocol: str) -> Inputs:
    """The same evaluation with the definition's reference as the solution: the control for an evaluation fault."""
    # SOL-ExecBench calls a PyTorch solution "pytorch"; FlashInfer-Bench calls it "python".
    language = "pytorch" if "pytorch" in protocol_named(protocol).languages else "python"
    solution = Solution.model_validate(
        {
            "name": f"{inputs.definition.name}-reference",
            "definition": inputs.definition.name,
            "spec": {"language": language, "entry_point": "reference.py::run", "destination_passing_style": False},
            "sources": [{"path": "reference.py", "content": inputs.reference_source}],
        }
    )
    return replace(inputs, solution=solution)


def _is_the_reference(inputs: Inputs, protocol: str) -> bool:
    """Whether the solution is the definition's reference as the control runs it: its one source, served the same
    way (a PyTorch function `run`, returning its outputs)."""
    solution, control = inputs.solution, _reference_as_solution(inputs, protocol).solution
    return (
        solution.spec.language_set == control.spec.language_set
        and solution.spec.entry_function == control.spec.entry_function
        and solution.spec.destination_passing_style is False
        and [source.content for source in solution.sources] == [inputs.reference_source]
    )


def _its_own_control(result: EvaluationResult) -> EvaluationResult:
    """A fault or a breached limit of the reference judged as its own solution: the host's, never a kernel's."""
    said = "the solution is the definition's reference"
    if result.status in LIMIT_STATUSES:
        got = f" ({_cases_passed(result)})" if result.status == "TIMEOUT" else ""
        reason = f"{result.reason}{got}, and {said}: this host cannot judge this definition within its limits"
        return result.model_copy(update={"status": "HARNESS_ERROR", "reason": reason})
    return result.model_copy(update={"reason": f"{result.reason} ({said})"})


def _cases_passed(result: EvaluationResult) -> str:
    """How far an evaluation that ran out of time got."""
    judged = sum(case.status == "PASSED" for case in result.cases)
    return f"it passed {judged} of {len(result.cases)} cases in that time"


def _attributed(
    result: EvaluationResult, control: EvaluationResult, control_share: float, control_timeout: float
) -> EvaluationResult:
    """An evaluation fault is the kernel's when it does not recur with the reference as the solution. A breached
    limit is the kernel's only where the control passed within it (a timeout: well within, `CONTROL_SHARE`);
    otherwise it is the host's (it cannot judge the definition within its limits), never the kernel's."""
    if result.status in LIMIT_STATUSES:
        return _limit_attributed(result, control, control_share, control_timeout)
    if control.status == "PASSED":
        reason = (
            f"the evaluation failed ({result.status}) only with this solution; with the reference as the solution "
            f"it passed: {result.reason}"
        )
        return result.model_copy(update={"status": "RUNTIME_ERROR", "reason": reason})
    reason = f"{result.reason} (it recurs with the reference as the solution: {control.status})"
    return result.model_copy(update={"reason": reason})


def _limit_attributed(
    result: EvaluationResult, control: EvaluationResult, control_share: float, control_timeout: float
) -> EvaluationResult:
    if control.status == "PASSED" and (result.status != "TIMEOUT" or control_share <= CONTROL_SHARE):
        return result
    if control.status == result.status == "TIMEOUT":
        control_said = (
            f"and the reference as the solution did not finish within {CONTROL_SHARE:.0%} of it "
            f"({control_timeout:g} s; {_cases_passed(control)})"
        )
    elif control.status == result.status:
        control_said = "and so did the reference as the solution"
    elif control.status == "PASSED":
        control_said = f"and the reference as the solution took {control_share:.0%} of it"
    else:
        control_said = f"and the reference as the solution ended {control.status} ({control.reason})"
    reason = f"{result.reason}, {control_said}: this host cannot judge this definition within its limits"
    return result.model_copy(update={"status": "HARNESS_ERROR", "reason": reason})


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


def _workspace(root: Path, inputs: Inputs, sandboxed: bool) -> Workspace:
    """The judge's folder (the job, the reference, data files), the kernel's (the solution alone) and the
    reference's (the reference alone, as a solution)."""
    judge, kernel, reference = root / "judge", root / "kernel", root / "reference"
    judge.mkdir()
    (judge / inputs.reference_name).write_text(inputs.reference_source, encoding="utf-8")
    for folder, solution in ((kernel, inputs.solution), (reference, _served_reference(inputs))):
        sources = folder / "solution"
        sources.mkdir(parents=True)
        for source in solution.sources:
            target = sources / source.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source.content, encoding="utf-8")
    return Workspace(judge=judge, kernel=kernel, sandboxed=sandboxed, reference=reference)


def _served_reference(inputs: Inputs) -> Solution:
    """The reference as the judge times it: a Python solution served by a process of its own, exactly as the
    kernel's is, so that both sides of every pair are measured by the same code."""
    return Solution.model_validate(
        {
            "name": f"{inputs.definition.name}-reference",
            "definition": inputs.definition.name,
            "spec": {"language": "python", "entry_point": "reference.py::run", "destination_passing_style": False},
            "sources": [{"path": "reference.py", "content": inputs.reference_source}],
        }
    )


def _readable(folder: Path) -> None:
    # The unprivileged processes must read their folders.
    folder.parent.chmod(0o755)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def jail_limits(options: EvaluationOptions) -> Limits:
    """What the jail holds the processes to: the options' limits, and the CPUs this process may use."""
    return Limits(
        timeout=options.timeout,
        memory_mb=options.memory_mb,
        scratch_mb=options.scratch_mb,
        cpus=allowed_cpus(),
        device=options.device,
    )


def _run(workspace: Workspace, inputs: Inputs, options: EvaluationOptions) -> Outcome:
    copied: dict[Path, str] = {}

    def judge_path_of(host: Path) -> str:
        # Copied into the judge's job (data files are small: indices, lengths), so the unprivileged judge reads them.
        if host not in copied:
            name = f"{len(copied)}{host.suffix}"
            (workspace.judge / "data").mkdir(exist_ok=True)
            shutil.copyfile(host, workspace.judge / "data" / name)
            copied[host] = str(workspace.job_in_sandbox("judge") / "data" / name)
        return copied[host]

    refused = _language_refused(inputs, options.protocol)
    if refused:
        return Outcome(fatal=("COMPILE_ERROR", refused))
    limits = jail_limits(options)
    drop = workspace.sandboxed and os.geteuid() == 0
    # The job's options, as the judge reads them from job.json.
    judged = {
        "device": options.device,
        "warmup": options.warmup_iterations,
        "iterations": options.timed_iterations,
        "memory_mb": options.memory_mb,
        "drop_privileges": drop,
        "protocol": options.protocol,
        "cpus": limits.cpus,
        "fresh_inputs": options.fresh_inputs,
        "precision": options.precision,
        "case_budget": options.case_budget,
        "definition": inputs.definition.name,
    }
    job, _ = build_job(inputs, judged, options.data_root, judge_path_of)
    served = {"kernel": job["solution"], "reference": solution_entry(_served_reference(inputs))}
    for role, solution in served.items():
        config = {
            **solution,
            "dir": str(workspace.job_in_sandbox(role) / "solution"),
            "device": options.device,
            "memory_mb": options.memory_mb,
            "drop_privileges": drop,
        }
        (workspace.folder(role) / "config.json").write_text(json.dumps(config), encoding="utf-8")
        _readable(workspace.folder(role))
    (workspace.judge / "job.json").write_text(json.dumps(job), encoding="utf-8")
    _readable(workspace.judge)
    return run_evaluation(
        workspace,
        job,
        limits,
        exchange_size=exchange_bytes(job["cases"]),
        known_cases=[case["uuid"] for case in job["cases"]],
        max_samples=MAX_PAIRS,
    )


def assemble(inputs: Inputs, outcome: Outcome, options: EvaluationOptions) -> EvaluationResult:
    device, protocol = options.device, options.protocol
    cases = _case_results(inputs, outcome)
    status, reason = _overall(cases, outcome)
    if outcome.limit_hit and status != "PASSED" and outcome.limit_hit[1] not in (reason or ""):
        # Named wherever it shows: a limit is often hit on the way to another failure (a fork that failed).
        reason = f"{reason} ({outcome.limit_hit[1]})" if reason else outcome.limit_hit[1]
    all_passed = all(case.status == "PASSED" for case in cases)
    cuda = device.startswith("cuda")
    known = protocol_named(protocol)
    latency = suite_latency([c.latency for c in cases if c.latency]) if all_passed else None
    reference_latency = (
        suite_latency([c.reference_latency for c in cases if c.reference_latency]) if all_passed else None
    )
    return EvaluationResult.model_validate(
        {
            "status": status,
            "reason": reason,
            "definition": inputs.definition.name,
            "solution": inputs.solution.name,
            "device": device,
            "cases": cases,
            "latency": latency,
            "reference_latency": reference_latency,
            "speedup": suite_speedup([c.speedup for c in cases if c.speedup]) if all_passed else None,
            "host_busy": _busiest(cases) if all_passed else None,
            "protocol": Protocol(
                name=protocol,
                version=known.version,
                warmup=options.warmup_iterations,
                iterations=options.timed_iterations,
                correctness_rounds=known.correctness_rounds,
                timer=outcome.timer or (CUDA_TIMER if cuda else CPU_TIMER),
                l2_flush=CUDA_FLUSH if cuda else CPU_FLUSH,
                statistic=known.timing.statistic,
                precision=options.precision,
                case_budget_s=options.case_budget if options.precision is not None else None,
            ),
            "limits": outcome.limits,
            "environment": {**host_environment(device), **outcome.environment},
            "harness": _harness_info(),
            "log_tail": outcome.log_tail,
        }
    )


def _busiest(cases: list[CaseResult]) -> float | None:
    shares = [case.host_busy for case in cases]
    return max(share for share in shares if share is not None) if cases and None not in shares else None


def _case_results(inputs: Inputs, outcome: Outcome) -> list[CaseResult]:
    results = []
    stopped_at: str | None = None
    for _, case in inputs.cases:
        reported = outcome.cases.get(case.uuid)
        if stopped_at is not None:
            reason = f"not run: the evaluation stopped at case {stopped_at}"
            results.append(CaseResult(uuid=case.uuid, status="NOT_RUN", reason=reason))
        elif reported is not None:
            results.append(_reported_case(_with_limit(reported, outcome)))
            if reported.get("stop"):
                stopped_at = case.uuid
        elif outcome.fatal is not None:
            results.append(_reported_case({"uuid": case.uuid, "status": outcome.fatal[0], "reason": outcome.fatal[1]}))
        else:
            stopped_at = case.uuid
            status, reason = _stop(outcome)
            results.append(_reported_case({"uuid": case.uuid, "status": status, "reason": reason}))
    return results


def _with_limit(reported: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
    """A case during which the kernel's process died: at a limit of its cgroup, that limit's failure; else how."""
    if not reported.get("kernel_ended"):
        return reported
    if outcome.limit_hit:
        return {**reported, "status": outcome.limit_hit[0], "reason": outcome.limit_hit[1]}
    if outcome.stopped:
        return {**reported, "status": outcome.stopped[0], "reason": outcome.stopped[1]}
    return {**reported, "reason": _ending("the kernel's process", outcome.kernel_returncode, outcome.log_tail)}


def _stop(outcome: Outcome) -> tuple[str, str]:
    """Why the case that was running has no result."""
    if outcome.stopped:
        return outcome.stopped
    if outcome.limit_hit:
        return outcome.limit_hit
    if outcome.judge_limit_hit:
        return "HARNESS_ERROR", outcome.judge_limit_hit
    return "HARNESS_ERROR", _ending("the judge", outcome.judge_returncode, outcome.judge_log_tail)


def _ending(who: str, code: int | None, log_tail: str) -> str:
    code = code or 0
    # bwrap reports a process's death by signal N as the exit status 128 + N.
    signal_number = -code if code < 0 else code - 128 if code > 128 else 0
    how = f"was killed by signal {signal_number}" if signal_number else f"exited with status {code}"
    last = log_tail.strip().splitlines()[-5:]
    return f"{who} {how} during this case" + (": " + "\n".join(last) if last else "")


def _reported_case(reported: dict[str, Any]) -> CaseResult:
    """A case as the judge reported it; what does not read as a result is a HARNESS_ERROR, not a crash."""
    fields = {key: value for key, value in reported.items() if key in CaseResult.model_fields}
    samples = reported.get("samples")
    reference_samples = reported.get("reference_samples")
    ratios = reported.get("pair_ratios")
    try:
        return CaseResult.model_validate(
            {
                **fields,
                "latency": latency_of(samples) if samples else None,
                "reference_latency": latency_of(reference_samples) if reference_samples else None,
                "speedup": ratio_speedup(ratios, reported.get("pair_ratio_bounds")) if ratios else None,
                "pairs": len(ratios) if ratios else None,
            }
        )
    except (ValidationError, TypeError, ValueError):
        reason = "the judge reported a result that does not read as one"
        return CaseResult(uuid=str(reported.get("uuid")), status="HARNESS_ERROR", reason=reason)


def _overall(cases: list[CaseResult], outcome: Outcome) -> tuple[str, str | None]:
    if outcome.fatal is not None:
        # The cases carry the fatal status as validated; an unknown one reads as RUNTIME_ERROR there.
        return cases[0].status, outcome.fatal[1]
    if outcome.stopped is not None:
        return outcome.stopped
    if not outcome.environment:
        # The judge never got as far as torch: the sandbox or the interpreter did not start.
        return "HARNESS_ERROR", "the judge did not start: " + outcome.judge_log_tail.strip()[-1000:]
    for case in cases:
        if case.status != "PASSED":
            return case.status, f"case {case.uuid}: {case.reason}"
    return "PASSED", None


def _harness_info() -> HarnessInfo:
    from harness import HARNESS_NAME, HARNESS_VERSION, harness_digest

    return HarnessInfo(name=HARNESS_NAME, version=HARNESS_VERSION, digest=harness_digest())


__all__ = [
    "DEFAULT_MEMORY_MB",
    "DEFAULT_TIMEOUT",
    "EvaluationOptions",
    "SandboxUnavailableError",
    "evaluate",
    "evaluate_with",
]
