"""Correctness as SOL-ExecBench states it: shape, dtype, no NaN or Inf, every element within atol + rtol·|ref|.

A case's tolerance decides. Where it gives none, floating-point outputs get
FlashInfer-Bench's defaults, atol = rtol = 1e-2 (the published workloads
without a tolerance come from FlashInfer-Bench, which checked them so), and
integers, booleans and packed 4-bit floats must match exactly.
`required_match_ratio` lets that share of elements be within tolerance instead
of all of them; NaN or Inf in a solution's output fails whatever the ratio,
except -inf where the reference has -inf and the case sets `allow_negative_inf`.
The relative error reported is |out − ref| / max(|ref|, atol), as SOL-ExecBench
reports it, so that elements near zero do not dominate it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

# (atol, rtol) where the case gives none.
DEFAULT_FLOAT_TOLERANCE = (1e-2, 1e-2)
EXACT = (0.0, 0.0)


@dataclass
class Verdict:
    status: str
    reason: str | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None


def outputs_as_list(returned: Any, names: Sequence[str]) -> list[Any]:
    """A solution's or reference's return value as one value per declared output."""
    if isinstance(returned, Mapping):
        return [returned.get(name) for name in names]
    if isinstance(returned, (tuple, list)):
        return list(returned)
    return [returned]


def reference_problem(outputs: Sequence[Any], specs: Mapping[str, Any], allow_negative_inf: bool) -> str | None:
    """Why the reference's outputs do not fit the definition, or None."""
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
        if value.is_floating_point() and value.dtype.itemsize > 1:
            widened = value.double() if value.dtype == torch.float64 else value.float()
            bad = ~torch.isfinite(widened)
            if allow_negative_inf:
                bad &= widened != float("-inf")
            if bad.any():
                return f"output {name!r}: the reference produced NaN or Inf at index {_first(bad)}"
    return None


def compare(
    outputs: Sequence[Any], expected: Sequence[Any], specs: Mapping[str, Any], tolerance: Mapping[str, Any]
) -> Verdict:
    if len(outputs) != len(expected):
        return Verdict("INCORRECT_SHAPE", f"the solution returned {len(outputs)} outputs, expected {len(expected)}")
    worst_abs, worst_rel = 0.0, 0.0
    for value, reference, name in zip(outputs, expected, specs, strict=True):
        verdict = _compare_one(name, value, reference, tolerance)
        if verdict.status != "PASSED":
            return verdict
        worst_abs = max(worst_abs, verdict.max_abs_error or 0.0)
        worst_rel = max(worst_rel, verdict.max_rel_error or 0.0)
    return Verdict("PASSED", None, worst_abs, worst_rel)


def _compare_one(name: str, value: Any, reference: Any, tolerance: Mapping[str, Any]) -> Verdict:
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
    return _compare_values(name, value.to(reference.device), reference, tolerance)


def _compare_values(name: str, value: torch.Tensor, reference: torch.Tensor, tolerance: Mapping[str, Any]) -> Verdict:
    exact = not reference.is_floating_point() or reference.dtype == torch.float4_e2m1fn_x2
    default_atol, default_rtol = EXACT if exact else DEFAULT_FLOAT_TOLERANCE
    atol = tolerance.get("atol")
    rtol = tolerance.get("rtol")
    atol = default_atol if atol is None else atol
    rtol = default_rtol if rtol is None else rtol
    if reference.dtype == torch.float4_e2m1fn_x2:
        # Packed pairs of 4-bit floats have no arithmetic: compare their bytes.
        value, reference = value.view(torch.uint8), reference.view(torch.uint8)
    wide = torch.float64 if reference.dtype in (torch.float64, torch.int64) else torch.float32
    got, want = value.to(wide), reference.to(wide)
    negative_inf = (want == float("-inf")) & (got == float("-inf")) if tolerance.get("allow_negative_inf") else None
    nonfinite = ~torch.isfinite(got)
    if negative_inf is not None:
        nonfinite &= ~negative_inf
    if nonfinite.any():
        index = _first(nonfinite)
        return Verdict("INCORRECT_NUMERICAL", f"output {name!r}: {got[index].item()} at index {index}")
    finite = torch.isfinite(want)
    difference = torch.where(finite, (got - want).abs(), torch.zeros_like(got))
    within = finite & (difference <= atol + rtol * want.abs())
    if negative_inf is not None:
        within |= negative_inf
    max_abs = float(difference.max().item()) if difference.numel() else 0.0
    relative = difference / want.abs().clamp_min(max(atol, torch.finfo(wide).tiny))
    max_rel = float(relative.max().item()) if relative.numel() else 0.0
    matched = float(within.double().mean().item()) if within.numel() else 1.0
    if matched < tolerance.get("match_ratio", 1.0):
        outside = ~within
        index = _first(outside)
        count = int(outside.sum().item())
        return Verdict(
            "INCORRECT_NUMERICAL",
            f"output {name!r}: {count} of {within.numel()} elements outside atol + rtol·|ref| "
            f"(atol={atol:g}, rtol={rtol:g}); first at index {index}: got {got[index].item():.6g}, "
            f"expected {want[index].item():.6g}",
            max_abs,
            max_rel,
        )
    return Verdict("PASSED", None, max_abs, max_rel)


def _first(mask: torch.Tensor) -> tuple[int, ...]:
    if mask.dim() == 0:
        return ()
    return tuple(int(i) for i in torch.nonzero(mask)[0].tolist())
