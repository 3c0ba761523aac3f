"""Correctness of a solution's outputs against the reference's, by a protocol's rule.

Every rule checks shape and dtype first, then fails a solution whose output
holds NaN or Inf (except -inf where the reference has -inf and the case sets
`allow_negative_inf`, in the rules that read the case's tolerance). What
follows is the protocol's `CorrectnessRule` (harness/judge/protocols.py): the
tolerance where the case gives none, the element bound ("sum":
|d| <= atol + rtol·|ref|; "either": |d| <= atol or |d| <= rtol·|ref|), the share
of elements that must be within it, what a non-finite reference element means,
the all-zero guard, and whether integers are exact. The relative error reported
is |out − ref| / max(|ref|, atol), as SOL-ExecBench reports it, so that elements
near zero do not dominate it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from harness.judge.protocols import PROTOCOLS, CorrectnessRule
from harness.judge.tensors import unpack_float4

KERNELINDEX_RULE = PROTOCOLS["kernelindex"].correctness
# FlashInfer-Bench's denominator of the relative error (bench/utils.py compute_error_stats).
_EITHER_EPSILON = 1e-8


@dataclass
class Verdict:
    status: str
    reason: str | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None


@dataclass(frozen=True)
class _Limits:
    atol: float
    rtol: float
    match_ratio: float
    allow_negative_inf: bool
    # The largest absolute error allowed whatever the ratio matched, where the case sets one.
    error_cap: float | None = None


def reference_problem(
    outputs: Sequence[Any],
    specs: Mapping[str, Any],
    allow_negative_inf: bool,
    rule: CorrectnessRule = KERNELINDEX_RULE,
) -> str | None:
    """Why the reference's outputs do not fit the definition, or None.

    A non-finite reference value is the reference's problem only where the rule
    says so; the sources count it against the solution, or not at all (`compare`).
    """
    if len(outputs) != len(specs):
        return f"the reference returned {len(outputs)} outputs, the definition declares {len(specs)}"
    for value, (name, spec) in zip(outputs, specs.items(), strict=True):
        if spec["shape"] is None:
            if isinstance(value, torch.Tensor) and value.dim() != 0:
                return f"output {name!r}: the reference returned shape {list(value.shape)} for a scalar"
            continue
        if not isinstance(value, torch.Tensor):
            return f"output {name!r}: the reference returned {type(value).__name__}, not a tensor"
        if list(value.shape) != spec["shape"] or str(value.dtype).removeprefix("torch.") != spec["dtype"]:
            declared = f"{spec['shape']} {spec['dtype']}"
            return f"output {name!r}: the reference returned {list(value.shape)} {value.dtype}, declared {declared}"
        if rule.reference_nonfinite == "invalid_reference" and value.is_floating_point() and value.dtype.itemsize > 1:
            widened = value.double() if value.dtype == torch.float64 else value.float()
            bad = ~torch.isfinite(widened)
            if allow_negative_inf and rule.use_case_tolerance:
                bad &= widened != float("-inf")
            if bad.any():
                return f"output {name!r}: the reference produced NaN or Inf at index {_first(bad)}"
    return None


def compare(
    outputs: Sequence[Any],
    expected: Sequence[Any],
    specs: Mapping[str, Any],
    tolerance: Mapping[str, Any],
    rule: CorrectnessRule = KERNELINDEX_RULE,
    definition_name: str | None = None,
) -> Verdict:
    """The solution's verdict on one set of inputs; `definition_name` picks a rule's per-definition match ratio."""
    if len(outputs) != len(expected):
        return Verdict("INCORRECT_SHAPE", f"the solution returned {len(outputs)} outputs, expected {len(expected)}")
    worst_abs, worst_rel = 0.0, 0.0
    for value, reference, name in zip(outputs, expected, specs, strict=True):
        verdict = _compare_one(name, value, reference, tolerance, rule, definition_name)
        if verdict.status != "PASSED":
            return verdict
        worst_abs = max(worst_abs, verdict.max_abs_error or 0.0)
        worst_rel = max(worst_rel, verdict.max_rel_error or 0.0)
    return Verdict("PASSED", None, worst_abs, worst_rel)


def _compare_one(
    name: str,
    value: Any,
    reference: Any,
    tolerance: Mapping[str, Any],
    rule: CorrectnessRule,
    definition_name: str | None,
) -> Verdict:
    if not isinstance(reference, torch.Tensor):
        reference = torch.tensor(reference)
        if isinstance(value, (int, float, bool)):
            value = torch.tensor(value, dtype=reference.dtype)
        elif isinstance(value, torch.Tensor):
            value = value.to(reference.dtype)
    if not isinstance(value, torch.Tensor):
        return Verdict("INCORRECT_SHAPE", f"output {name!r}: got {type(value).__name__}, expected a tensor")
    if value.shape != reference.shape:
        return Verdict(
            "INCORRECT_SHAPE", f"output {name!r}: shape {list(value.shape)}, expected {list(reference.shape)}"
        )
    if value.dtype != reference.dtype:
        return Verdict("INCORRECT_DTYPE", f"output {name!r}: dtype {value.dtype}, expected {reference.dtype}")
    exact = _has_no_rounding(reference.dtype) and rule.integers == "exact"
    limits = _limits(tolerance, rule, definition_name, exact)
    if reference.device.type == "cpu" and reference.numel() > SCAN_CHUNK and reference.dtype != torch.float4_e2m1fn_x2:
        passed = _scanned_pass(value.to(reference.device), reference, limits, rule, exact)
        if passed is not None:
            return passed
    got, want = _widened(value.to(reference.device), exact), _widened(reference, exact)
    return _compare_values(name, got, want, limits, rule)


# A large output is first scanned in chunks of this many elements: each chunk's dozen passes stay in the CPU's
# cache instead of streaming the whole output through memory a dozen times (104 M bfloat16 values against the
# reference's: 1.9 s whole, 0.7 s in chunks, on two cores). The scan only passes an output; every other verdict,
# and its description, comes from the whole-tensor check (`_compare_values`), whose figures the scan's equal
# element for element.
SCAN_CHUNK = 1 << 18


def _scanned_pass(
    got: torch.Tensor, want: torch.Tensor, limits: _Limits, rule: CorrectnessRule, exact: bool
) -> Verdict | None:
    """PASSED, with the largest errors, where both sides are finite, the output is not all zeros against a
    non-zero reference, enough elements are within the tolerance and none is past the case's cap; else None."""
    flat_got, flat_want = got.reshape(-1), want.reshape(-1)
    max_abs, max_rel, outside, got_nonzero, want_nonzero = 0.0, 0.0, 0, False, False
    for start in range(0, flat_want.numel(), SCAN_CHUNK):
        chunk_got = _widened(flat_got[start : start + SCAN_CHUNK], exact)
        chunk_want = _widened(flat_want[start : start + SCAN_CHUNK], exact)
        got_extremes, want_extremes = _extremes(chunk_got), _extremes(chunk_want)
        if not all(math.isfinite(value) for value in (*got_extremes, *want_extremes)):
            return None
        got_nonzero = got_nonzero or got_extremes != (0.0, 0.0)
        want_nonzero = want_nonzero or want_extremes != (0.0, 0.0)
        difference = (chunk_got - chunk_want).abs_()
        magnitude = chunk_want.abs()
        outside += difference.numel() - int(torch.count_nonzero(_within(difference, magnitude, limits, rule)).item())
        max_abs = max(max_abs, float(difference.max().item()))
        floor = max(limits.atol, torch.finfo(difference.dtype).tiny)
        max_rel = max(max_rel, float(difference.div_(magnitude.clamp_min_(floor)).max().item()))
    counted = flat_want.numel()
    if rule.all_zero_guard and want_nonzero and not got_nonzero:
        return None
    if (counted - outside) / counted < limits.match_ratio:
        return None
    if limits.error_cap is not None and max_abs > limits.error_cap:
        return None
    return Verdict("PASSED", None, max_abs, max_rel)


def _extremes(values: torch.Tensor) -> tuple[float, float]:
    low, high = torch.aminmax(values)
    return float(low.item()), float(high.item())


def _has_no_rounding(dtype: torch.dtype) -> bool:
    return not dtype.is_floating_point or dtype == torch.float4_e2m1fn_x2


def _limits(tolerance: Mapping[str, Any], rule: CorrectnessRule, definition_name: str | None, exact: bool) -> _Limits:
    given = tolerance if rule.use_case_tolerance else {}
    atol, rtol, ratio = given.get("atol"), given.get("rtol"), given.get("match_ratio")
    return _Limits(
        # Exact integers take no tolerance, the case's included: a case's tolerance is written for its floats.
        atol=0.0 if exact else rule.default_atol if atol is None else float(atol),
        rtol=0.0 if exact else rule.default_rtol if rtol is None else float(rtol),
        match_ratio=rule.match_ratio_for(definition_name) if ratio is None else float(ratio),
        allow_negative_inf=bool(given.get("allow_negative_inf")),
        error_cap=None if exact or given.get("error_cap") is None else float(given["error_cap"]),
    )


def _widened(tensor: torch.Tensor, exact: bool) -> torch.Tensor:
    """The values compared: float32, as both sources widen; float64 where that loses digits an exact check needs.

    4-bit floats are compared as their bytes when exact, else as the values they decode to.
    """
    if tensor.dtype == torch.float4_e2m1fn_x2:
        return tensor.view(torch.uint8).double() if exact else unpack_float4(tensor)
    wide = torch.float64 if exact or tensor.dtype in (torch.float64, torch.int64) else torch.float32
    return tensor.to(wide)


def _compare_values(
    name: str, got: torch.Tensor, want: torch.Tensor, limits: _Limits, rule: CorrectnessRule
) -> Verdict:
    # Few whole-tensor passes, no boolean indexing, masks only where non-finite values need them: an output of
    # 59 M elements (rmsnorm at batch 14418) was checked in 14 s a round, and ten rounds of such cases passed
    # the evaluation's time limit; it takes about a second now.
    solution_bad = None if _all_finite(got) else ~torch.isfinite(got)
    reference_bad = None if _all_finite(want) else ~torch.isfinite(want)
    # Matching -inf is allowed where the case says so: those elements are neither bad nor counted.
    both_negative_inf = None
    if limits.allow_negative_inf and solution_bad is not None and reference_bad is not None:
        both_negative_inf = (want == float("-inf")) & (got == float("-inf"))
        solution_bad &= ~both_negative_inf
        reference_bad &= ~both_negative_inf
    if solution_bad is not None and solution_bad.any():
        index = _first(solution_bad)
        return Verdict("INCORRECT_NUMERICAL", f"output {name!r}: {got[index].item()} at index {index}")
    if reference_bad is not None and not reference_bad.any():
        reference_bad = None
    if rule.reference_nonfinite == "incorrect" and reference_bad is not None:
        index = _first(reference_bad)
        return Verdict(
            "INCORRECT_NUMERICAL",
            f"output {name!r}: the reference has {want[index].item()} at index {index}, "
            "which this protocol counts against the solution",
        )
    if rule.all_zero_guard and _all_zero_against_nonzero(got, want, both_negative_inf):
        return Verdict("INCORRECT_NUMERICAL", f"output {name!r}: all zeros, the reference is not")
    difference = (got - want).abs_()
    for skipped in (reference_bad, both_negative_inf):
        if skipped is not None:
            difference.masked_fill_(skipped, 0)
    want_magnitude = want.abs()
    within = _within(difference, want_magnitude, limits, rule)
    if reference_bad is not None:
        # FlashInfer-Bench: the error at a NaN or Inf reference is NaN, which exceeds nothing.
        within = within | reference_bad if rule.reference_nonfinite == "ignore" else within & ~reference_bad
    max_abs = float(difference.max().item()) if difference.numel() else 0.0
    floor = max(limits.atol, torch.finfo(difference.dtype).tiny)
    relative = difference.div_(want_magnitude.clamp_min_(floor))
    max_rel = float(relative.max().item()) if relative.numel() else 0.0
    # The share within tolerance is of the elements other than matching -inf.
    outside = ~within if both_negative_inf is None else ~within & ~both_negative_inf
    excluded = 0 if both_negative_inf is None else int(torch.count_nonzero(both_negative_inf).item())
    counted, outside_count = within.numel() - excluded, int(torch.count_nonzero(outside).item())
    matched = (counted - outside_count) / counted if counted else 1.0
    if matched < limits.match_ratio:
        return _mismatch(name, got, want, outside, outside_count, counted, limits, rule, max_abs, max_rel)
    if limits.error_cap is not None and max_abs > limits.error_cap:
        return Verdict(
            "INCORRECT_NUMERICAL",
            f"output {name!r}: largest absolute error {max_abs:.6g}, above the case's cap of {limits.error_cap:g} "
            f"(max_error_cap), though {matched:.4%} of elements are within the tolerance",
            max_abs,
            max_rel,
        )
    return Verdict("PASSED", None, max_abs, max_rel)


def _all_finite(values: torch.Tensor) -> bool:
    """Whether every element is finite, in one pass that allocates nothing: min and max propagate NaN."""
    if values.numel() == 0:
        return True
    low, high = torch.aminmax(values)
    return bool(torch.isfinite(low).item()) and bool(torch.isfinite(high).item())


def _all_zero_against_nonzero(got: torch.Tensor, want: torch.Tensor, excluded: torch.Tensor | None) -> bool:
    """An all-zero output where the reference is not, over the elements not excluded."""
    if excluded is None:
        return bool(torch.count_nonzero(want).item()) and not bool(torch.count_nonzero(got).item())
    kept = ~excluded
    return bool(((want != 0) & kept).any()) and not bool(((got != 0) & kept).any())


def _within(
    difference: torch.Tensor, want_magnitude: torch.Tensor, limits: _Limits, rule: CorrectnessRule
) -> torch.Tensor:
    if rule.element_rule == "either":
        relative = difference / (want_magnitude + _EITHER_EPSILON)
        return (difference <= limits.atol) | (relative <= limits.rtol)
    return difference <= limits.atol + limits.rtol * want_magnitude


def _mismatch(
    name: str,
    got: torch.Tensor,
    want: torch.Tensor,
    outside: torch.Tensor,
    outside_count: int,
    considered: int,
    limits: _Limits,
    rule: CorrectnessRule,
    max_abs: float,
    max_rel: float,
) -> Verdict:
    index = _first(outside)
    bound = "atol + rtol·|ref|" if rule.element_rule == "sum" else "both atol and rtol·|ref|"
    allowed = "" if limits.match_ratio >= 1 else f", {limits.match_ratio:.4g} of them must be within"
    return Verdict(
        "INCORRECT_NUMERICAL",
        f"output {name!r}: {outside_count} of {considered} elements outside {bound} "
        f"(atol={limits.atol:g}, rtol={limits.rtol:g}{allowed}); first at index {index}: "
        f"got {got[index].item():.6g}, expected {want[index].item():.6g}",
        max_abs,
        max_rel,
    )


def _first(mask: torch.Tensor) -> tuple[int, ...]:
    if mask.dim() == 0:
        return ()
    return tuple(int(i) for i in torch.nonzero(mask)[0].tolist())
