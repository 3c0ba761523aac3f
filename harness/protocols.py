"""Evaluation protocols: how a source's own evaluator judges a kernel, one record per source.

A rerun judges a kernel as the run's source would (DESIGN: "Protocols"). Each
protocol fixes the solution languages it accepts, how inputs are generated,
the correctness rule, the rounds of fresh inputs, and the timing setup. The
rules are confirmed from each source's public evaluator; see the comments on
each field for where.

One record per protocol, used by the judge (inputs, correctness, rounds,
timing) and by the loader (languages); `--protocol NAME` picks one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class CorrectnessRule:
    """How one output is compared with the reference's."""

    # Where the case gives no tolerance.
    default_atol: float
    default_rtol: float
    # The share of elements that must be within tolerance where the case gives none.
    default_match_ratio: float
    # "sum": |d| <= atol + rtol*|ref|; "either": |d| <= atol or |d| <= rtol*|ref|.
    element_rule: Literal["sum", "either"]
    # Whether the case's own tolerance is used at all.
    use_case_tolerance: bool
    # What a non-finite reference element where the solution is finite means.
    reference_nonfinite: Literal["invalid_reference", "incorrect", "ignore"]
    # An all-zero output against a non-zero reference fails, whatever the tolerance.
    all_zero_guard: bool
    # Integers: compared exactly, or with the tolerance after widening to float32.
    integers: Literal["exact", "tolerance"]


@dataclass(frozen=True)
class TimingSetup:
    warmup: int
    iterations: int
    trials: int
    statistic: Literal["median", "mean"]
    # On CUDA: CUPTI (every kernel of the call, any stream) or CUDA events.
    cuda_timer: Literal["cupti", "cuda_event"]


@dataclass(frozen=True)
class Protocol:
    name: str
    version: str
    # The solution languages the source accepts (lower case, as the source spells them).
    languages: frozenset[str]
    # "sol-execbench": SOL-ExecBench's dtype ranges and name rules; "kernelindex": plain randn / small integers.
    input_rule: Literal["sol-execbench", "flashinfer-bench", "kernelindex"]
    # Rounds of fresh inputs whose outputs are all checked before timing.
    correctness_rounds: int
    correctness: CorrectnessRule
    timing: TimingSetup


# Exactly the names `--protocol` takes; other tools script them.
PROTOCOL_NAMES = ("sol-execbench", "flashinfer-bench", "kernelindex")
DEFAULT_PROTOCOL = "kernelindex"

PROTOCOLS: dict[str, Protocol] = {}


def protocol_named(name: str) -> Protocol:
    return PROTOCOLS[name]
