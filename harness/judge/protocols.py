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
    # Integers, booleans and packed 4-bit floats: compared exactly (bytes), or with
    # the tolerance after widening to float32 (4-bit floats decoded first).
    integers: Literal["exact", "tolerance"]
    # Share of elements required where the case gives none, by a substring of the
    # definition's name (first match wins); default_match_ratio otherwise.
    definition_match_ratios: tuple[tuple[str, float], ...] = ()

    def match_ratio_for(self, definition_name: str | None) -> float:
        for part, ratio in self.definition_match_ratios:
            if definition_name and part in definition_name:
                return ratio
        return self.default_match_ratio


@dataclass(frozen=True)
class TimingSetup:
    warmup: int
    iterations: int
    trials: int
    # Over one trial's timed iterations.
    statistic: Literal["median", "mean"]
    # On CUDA: CUPTI (every kernel of the call, any stream) or CUDA events.
    cuda_timer: Literal["cupti", "cuda_event"]
    # Over the trials' statistics (one trial per set of inputs).
    across_trials: Literal["median", "mean"] = "mean"
    # L2 written over before every iteration.
    cold_l2_cache: bool = True
    # Every iteration gets its inputs at a new address (a copy), so no result can be cached by pointer.
    fresh_pointers: bool = True


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

_SOL = "NVIDIA/SOL-ExecBench"
_SOL_COMMIT = "8d2237d2012cba81f64905b273b592653623abf9"
_FIB_MAIN_COMMIT = "40e6ca7844b514eb4b1c7edba6d6a7377df57870"

SOL_EXECBENCH = Protocol(
    name="sol-execbench",
    version=f"{_SOL}@{_SOL_COMMIT[:12]}",
    # SOL-ExecBench src/sol_execbench/core/data/solution.py: SupportedLanguages (BuildSpec.languages is a list).
    languages=frozenset(
        {"pytorch", "triton", "cute_dsl", "cutile", "cudnn_frontend", "cutlass", "cudnn", "cublas", "cuda_cpp"}
    ),
    # SOL-ExecBench src/sol_execbench/core/bench/io.py: _rand_tensor and _generate_heuristic_tensor.
    input_rule="sol-execbench",
    # SOL-ExecBench src/sol_execbench/driver/templates/eval_driver.py: `for _round in range(10)`, gen_inputs each round.
    correctness_rounds=10,
    correctness=CorrectnessRule(
        # SOL-ExecBench src/sol_execbench/core/data/workload.py: ToleranceSpec max_atol/max_rtol default 1e-2.
        default_atol=1e-2,
        default_rtol=1e-2,
        # Same file: required_matched_ratio defaults to 0.99 (also when the workload has no tolerance at all).
        default_match_ratio=0.99,
        # SOL-ExecBench src/sol_execbench/core/bench/correctness.py: compute_error_stats, |x-y| > atol + rtol*|y|.
        element_rule="sum",
        # Same: compute_error_stats takes the workload's ToleranceSpec.
        use_case_tolerance=True,
        # Same: check_tensor_sanity fails on non-finite values in the reference as in the solution.
        reference_nonfinite="incorrect",
        # Same: check_tensor_sanity, a zero-norm solution against a non-zero reference fails.
        all_zero_guard=True,
        # Same: compute_error_stats widens both sides with .to(torch.float32), integers included.
        integers="tolerance",
    ),
    timing=TimingSetup(
        # SOL-ExecBench src/sol_execbench/core/bench/config/benchmark_config.py: warmup_runs=10, iterations=50.
        warmup=10,
        iterations=50,
        # SOL-ExecBench src/sol_execbench/driver/templates/eval_driver.py: one time_runnable call per workload.
        trials=1,
        # SOL-ExecBench src/sol_execbench/core/bench/timing.py: time_runnable return_mode="median", methodology="cupti".
        statistic="median",
        cuda_timer="cupti",
        across_trials="mean",
        # Same: bench_gpu_time_with_cupti(cold_l2_cache=True) zeroes a buffer twice the L2 size per iteration.
        cold_l2_cache=True,
        # SOL-ExecBench src/sol_execbench/core/bench/io.py: ShiftingMemoryPoolAllocator, a new data_ptr per iteration.
        fresh_pointers=True,
    ),
)

FLASHINFER_BENCH = Protocol(
    name="flashinfer-bench",
    # Correctness and inputs as the released 0.1.2 (main at the commit below does the same); timing as main,
    # which timed the published traces (their logs show bench/timing.py calling bench_gpu_time_with_cupti).
    version=f"flashinfer-bench 0.1.2; timing as flashinfer-ai/flashinfer-bench@{_FIB_MAIN_COMMIT[:12]}",
    # flashinfer-bench 0.1.2 flashinfer_bench/data/solution.py: SupportedLanguages (one spec.language).
    languages=frozenset({"python", "triton", "cpp", "cuda", "tilelang"}),
    # flashinfer-bench 0.1.2 flashinfer_bench/bench/utils.py: _rand_tensor per dtype, no name rules.
    input_rule="flashinfer-bench",
    # flashinfer-bench 0.1.2 flashinfer_bench/bench/evaluators/default.py: build_baseline draws num_trials input
    # sets and check_correctness checks every one; flashinfer_bench/bench/config.py: num_trials=3.
    correctness_rounds=3,
    correctness=CorrectnessRule(
        # flashinfer-bench 0.1.2 flashinfer_bench/bench/config.py: BenchmarkConfig atol=rtol=1e-2.
        default_atol=1e-2,
        default_rtol=1e-2,
        # Same: required_matched_ratio=None, read as 1.0 by bench/utils.py compute_error_stats.
        default_match_ratio=1.0,
        # flashinfer-bench 0.1.2 flashinfer_bench/bench/utils.py: compute_error_stats exceeds only when
        # abs_error > atol AND abs_error / (|ref| + 1e-8) > rtol.
        element_rule="either",
        # flashinfer-bench 0.1.2 flashinfer_bench/data/workload.py: a Workload has no tolerance; the run's
        # BenchmarkConfig decides for every workload.
        use_case_tolerance=False,
        # flashinfer-bench 0.1.2 flashinfer_bench/bench/utils.py: a NaN error compares False, so the element passes;
        # evaluators/default.py checks only the solution for inf/nan.
        reference_nonfinite="ignore",
        # flashinfer-bench 0.1.2 flashinfer_bench/bench/evaluators/default.py: no such check.
        all_zero_guard=False,
        # flashinfer-bench 0.1.2 flashinfer_bench/bench/utils.py: compute_error_stats widens with .to(torch.float32).
        integers="tolerance",
        # flashinfer-bench 0.1.2 flashinfer_bench/bench/evaluators/lowbit.py: LowBitEvaluator, for names containing
        # "moe_fp8_block_scale", sets required_matched_ratio 0.95 when none is configured.
        definition_match_ratios=(("moe_fp8_block_scale", 0.95),),
    ),
    timing=TimingSetup(
        # flashinfer-bench 0.1.2 flashinfer_bench/bench/config.py (main: bench/config.py ResolvedEvalConfig):
        # warmup_runs=10, iterations=50, num_trials=3.
        warmup=10,
        iterations=50,
        trials=3,
        # flashinfer-ai/flashinfer-bench main flashinfer_bench/bench/timing.py: time_runnable returns
        # statistics.median of bench_gpu_time_with_cupti (CUDA events where CUPTI is missing). 0.1.2 instead
        # took the mean of CUDA events (do_bench return_mode="mean").
        statistic="median",
        cuda_timer="cupti",
        # flashinfer_bench/bench/evaluators/default.py (0.1.2 and main): the mean over the trials' latencies.
        across_trials="mean",
        # main flashinfer_bench/bench/timing.py: cold_l2_cache=True.
        cold_l2_cache=True,
        # 0.1.2 flashinfer_bench/bench/timing.py cloned the arguments per iteration; main hands one
        # input_args tuple to flashinfer.testing (whether that rotates buffers is not confirmed here).
        fresh_pointers=False,
    ),
)

# Our own, for native runs: SOL-ExecBench's rule where it is sound, stricter where a loose default could pass a
# wrong kernel. Each choice says why.
KERNELINDEX = Protocol(
    name="kernelindex",
    # 2: an input whose name requires a range (a variance, a standard deviation) is drawn in it (harness.judge.tensors
    # NameRule.required); version 1 drew it from randn, and a reference taking its root yielded NaN.
    # 3: so is a state-space decay the definition describes as one (negative); version 2 drew it from randn, and
    # a reference exponentiating its sums overflowed.
    version="kernelindex-3",
    # Native runs may be written in any language either source takes.
    languages=SOL_EXECBENCH.languages | FLASHINFER_BENCH.languages,
    # Plain randn floats and small non-negative integers: integer inputs are mostly indices and lengths. Only
    # the ranges a name requires come from SOL-ExecBench's name rules, not its conveniences (norm weights ones).
    input_rule="kernelindex",
    # A failure must hold on fresh inputs (DESIGN: evidence rule); three draws, as FlashInfer-Bench checks.
    correctness_rounds=3,
    correctness=CorrectnessRule(
        # Where the case gives none, the tolerance both sources default to.
        default_atol=1e-2,
        default_rtol=1e-2,
        # Every element, unless the case allows fewer: a wrong element is a wrong result.
        default_match_ratio=1.0,
        # The torch.allclose bound, as SOL-ExecBench: it never rejects what "either" accepts near |ref| = atol/rtol.
        element_rule="sum",
        # The case's author knows the problem's precision.
        use_case_tolerance=True,
        # A reference that yields NaN or Inf cannot judge anything; it is the reference's fault.
        reference_nonfinite="invalid_reference",
        # An all-zero output passing against a small reference is a kernel that did nothing.
        all_zero_guard=True,
        # Integers (indices, counts, flags) have no rounding error to tolerate.
        integers="exact",
    ),
    timing=TimingSetup(
        # harness/kernel/l2_flush.py and harness/parent/api.py defaults: 10 warm-up, 50 timed, CUDA events, L2
        # written over.
        warmup=10,
        iterations=50,
        trials=1,
        # harness/parent/stats.py: the median, with a distribution-free 95 % interval.
        statistic="median",
        cuda_timer="cuda_event",
        across_trials="mean",
        cold_l2_cache=True,
        fresh_pointers=False,
    ),
)

PROTOCOLS: dict[str, Protocol] = {
    protocol.name: protocol for protocol in (SOL_EXECBENCH, FLASHINFER_BENCH, KERNELINDEX)
}
assert tuple(PROTOCOLS) == PROTOCOL_NAMES


def protocol_named(name: str) -> Protocol:
    return PROTOCOLS[name]
