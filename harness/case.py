"""One case inside the child: inputs, reference, solution, checks, timing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from harness.checking import compare, outputs_as_list, reference_problem
from harness.failures import failure_status, failure_text
from harness.tensors import DTYPES, InputError, build_inputs, changed_input, clone
from harness.timing import time_calls, timer_tampering


def evaluate_case(
    case: Mapping[str, Any],
    job: Mapping[str, Any],
    reference_run: Callable[..., Any],
    entrypoint: Callable[..., Any] | None,
    solution: Callable[..., Any],
) -> dict[str, Any]:
    device = job["device"]
    has_custom = any(spec["source"] == "custom" for spec in case["inputs"].values())
    try:
        inputs = build_inputs(case, device, entrypoint)
    except InputError as error:
        return _failed(case, error.status, error.reason)
    except Exception as error:
        status = failure_status(error, "INVALID_REFERENCE" if has_custom else "RUNTIME_ERROR")
        return _failed(case, status, "the inputs could not be built: " + failure_text(error))

    reference_arguments = [clone(value) for value in inputs.values()]
    try:
        expected = outputs_as_list(reference_run(*reference_arguments), list(case["outputs"]))
        _synchronize(device)
    except Exception as error:
        status = failure_status(error, "INVALID_REFERENCE")
        return _failed(case, status, "the reference failed: " + failure_text(error))
    problem = reference_problem(expected, case["outputs"], bool(case["tolerance"].get("allow_negative_inf")))
    if problem:
        return _failed(case, "INVALID_REFERENCE", problem)

    # The solution gets copies of its own; the originals stay as built, to catch writes into inputs.
    copies = {name: clone(value) for name, value in inputs.items()}
    outputs = _allocate_outputs(case, device) if job["solution"]["dps"] else []
    arguments = [*copies.values(), *outputs]
    try:
        returned = solution(*arguments)
        _synchronize(device)
    except Exception as error:
        return _failed(case, failure_status(error), failure_text(error))
    changed = changed_input(inputs, copies)
    if changed:
        return _failed(case, "REWARD_HACK", f"the solution wrote into its inputs: {changed}")
    produced = outputs if job["solution"]["dps"] else outputs_as_list(returned, list(case["outputs"]))
    disguised = [type(value).__name__ for value in produced if isinstance(value, torch.Tensor)]
    if any(name != "Tensor" for name in disguised):
        # A subclass can answer comparisons as it likes: only plain tensors are checked.
        return _failed(case, "REWARD_HACK", f"the solution returned {', '.join(disguised)}, not plain tensors")
    verdict = compare(produced, expected, case["outputs"], case["tolerance"])
    result = {
        "uuid": case["uuid"],
        "status": verdict.status,
        "reason": verdict.reason,
        "max_abs_error": verdict.max_abs_error,
        "max_rel_error": verdict.max_rel_error,
    }
    if verdict.status != "PASSED":
        return result
    return _timed(result, case, job, reference_run, reference_arguments, solution, arguments, inputs, copies)


def _timed(
    result: dict[str, Any],
    case: Mapping[str, Any],
    job: Mapping[str, Any],
    reference_run: Callable[..., Any],
    reference_arguments: list[Any],
    solution: Callable[..., Any],
    arguments: list[Any],
    inputs: Mapping[str, Any],
    copies: Mapping[str, Any],
) -> dict[str, Any]:
    device, warmup, iterations = job["device"], job["warmup"], job["iterations"]
    tampered = timer_tampering()
    if tampered:
        return _failed(case, "REWARD_HACK", f"the solution replaced the harness's clock: {tampered}")
    try:
        result["reference_samples"] = time_calls(reference_run, reference_arguments, device, warmup, iterations)
    except Exception as error:
        return _failed(case, failure_status(error, "INVALID_REFERENCE"), "timing the reference: " + failure_text(error))
    try:
        result["samples"] = time_calls(solution, arguments, device, warmup, iterations)
    except Exception as error:
        return _failed(case, failure_status(error), "timing the solution: " + failure_text(error))
    changed = changed_input(inputs, copies)
    if changed:
        return _failed(case, "REWARD_HACK", f"the solution wrote into its inputs while being timed: {changed}")
    tampered = timer_tampering()
    if tampered:
        return _failed(case, "REWARD_HACK", f"the solution replaced the harness's clock while being timed: {tampered}")
    return result


def _allocate_outputs(case: Mapping[str, Any], device: str) -> list[torch.Tensor]:
    outputs = []
    for spec in case["outputs"].values():
        output = torch.empty(
            spec["shape"] if spec["shape"] is not None else (), dtype=DTYPES[spec["dtype"]], device=device
        )
        # Freshly allocated memory may still hold a freed result of the reference: a solution that writes
        # nothing must not pass on it. NaN fails any check; integers get their largest value.
        if output.dtype == torch.float4_e2m1fn_x2:
            output.view(torch.uint8).fill_(0xFF)
        elif output.is_floating_point():
            output.fill_(float("nan"))
        elif output.dtype != torch.bool:
            output.fill_(torch.iinfo(output.dtype).max)
        outputs.append(output)
    return outputs


def _synchronize(device: str) -> None:
    # CUDA reports a kernel's failure at the next synchronisation: make it this call's.
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def _failed(case: Mapping[str, Any], status: str, reason: str) -> dict[str, Any]:
    return {"uuid": case["uuid"], "status": status, "reason": reason}
