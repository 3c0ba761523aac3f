"""One case, judged: correctness rounds on fresh inputs, then the kernel and the reference timed in pairs.

Inside the judge. The kernel's process and the reference's are reached only
through a `ServedLink` each (harness.judge.served): inputs go into that process's
exchange, the request goes down a pipe, and the outputs are read from the
exchange, copied out at once, and checked here. Every call, checked or timed,
looks the same from the served side.

- Correctness: `correctness_rounds` rounds (the protocol's), each on inputs
  from a fresh seed, except one round drawn at random that uses the case's own
  seed (so a failure there is reproducible; the kernel cannot tell which round
  it is, so a failure on either is its own), every output checked, all at the
  same addresses: whatever a kernel keys on an address is stale by the second
  round. Nothing of a round is timed: on the CPU the judge runs the reference
  and draws the next round's inputs while the kernel's process computes.
- Timing: pairs of requests, one to each side on the same fresh inputs, in an
  order drawn per pair, until the speedup's 95 % interval is within the
  precision asked for or the case's budget ends (`_timed`): seconds of the
  judge's own measure of both sides, not of wall time, which a kernel could
  spend idle to end its case early. The figure of
  a request is the judge's own measure (`_net`): on the CPU, its latency, the
  larger of the CPU time of the served process's cgroup over the request,
  read while the group is frozen, and the judge's wall clock around it less
  the serving thread's run-queue wait (the CPU time alone where the host
  keeps no run-queue statistics); on CUDA or without a cgroup, the judge's
  wall clock around it;
  either less the calibrated cost of an empty request, measured before
  anything was loaded. The speedup is the median of the pairs' ratios, with a
  sign-test interval (harness.parent.stats).
- Between its requests each served group is frozen: the kernel cannot work
  while the judge stages inputs, checks outputs or times the reference. On
  CUDA, where queued GPU work outlives a frozen process, the reference's
  process first checks that the GPU is idle (`_wait_for_idle_gpu`).
- While the pairs run, the judge also measures how much of the host's CPU
  time other work used (harness.judge.host): the evidence rule allows for a wider
  spread between evaluations on a busy host.
- The times the kernel's process reports are detail. Where they leave most of
  the CPU time the judge measured unexplained, even allowing thrice the
  harness's own cost, the kernel's process lied about its time: a REWARD_HACK
  (`_check_reported`).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from harness.judge.checking import compare, reference_problem
from harness.judge.host import mark, other_share
from harness.judge.protocols import protocol_named
from harness.judge.served import Block, Call, EmptyCost, KernelFault, ServedLink
from harness.judge.tensors import CUDA_ONLY_DTYPES, InputError, build_inputs, changed_inputs, clone
from harness.parent.stats import MAX_PAIRS, MIN_PAIRS, settled
from harness.wire.failures import failure_status, failure_text, needs_missing_cuda
from harness.wire.outputs import outputs_as_list

# The share of timed calls whose outputs are checked, drawn after each request.
CHECKED_SHARE = 0.25
# A request's figure is never taken below this share of its empty cost: at the noise of the calibration a
# ratio means nothing, and the interval it widens says so.
NET_FLOOR_SHARE = 0.05
# The reported split against the judge's measure: the CPU time the kernel's reported times leave unexplained,
# after this many times the harness's own cost of its requests (which a busy host inflates), may be at most
# twice what it reported. An honest kernel's wall-clock times cover its CPU time whatever the host does, except
# where it may use several CPUs: a thread pool's workers spin a while after each call (OpenMP's wait policy, which
# PyTorch's CPU operators use), so the other CPUs' time outside the reported calls is allowed too. On one CPU
# (every rerun: OMP_NUM_THREADS=1) nothing is.
OWN_COST_ALLOWANCE = 3.0
UNEXPLAINED_FACTOR = 2.0
# On the judge's wall clock (CUDA, or a served process without a cgroup), the calibrated cost of an empty request
# is known only this well either way: it was measured before the solution loaded, perhaps on an idle GPU at low
# clocks, and a request's round trip and freeze vary by milliseconds (on an H200 host, an honest kernel's requests
# came in a fifth under the calibrated empty cost, and two evaluations of one kernel differed more than twofold).
# Each pair's ratio is bounded with the empty cost this much lower and higher on each side, and the case's
# interval spans those bounds: where the calls' own work is small beside the harness's cost of a request, the
# interval is wide and the verdict inconclusive, never decided by the harness's noise. The CPU time of a cgroup,
# calibrated the same way, has not drifted so: there the bounds are the ratio itself.
WALL_OWN_UNCERTAINTY = 0.5
# On CUDA, before each reference request: the probe may take this many times its calibrated time, plus this;
# past it the GPU is busy with work the kernel's process left queued, and the judge waits for it this long.
PROBE_FACTOR, PROBE_MARGIN_NS, PROBE_PATIENCE_S = 4.0, 200_000, 2.0
# After the warm-up, timed requests hold as many calls as make about this much work on the slower side (within
# the calls the exchange has slots for): long enough that the harness's own cost of a request (thaw, round trip,
# freeze: about half a millisecond of the served process's CPU, and as noisy) is a few per cent of it, short
# enough that slow kernels are timed in many pairs, whose median settles sooner.
REQUEST_TARGET_NS = 8_000_000

_secret = random.SystemRandom()


@dataclass(frozen=True)
class Pair:
    """One request to each side on the same inputs: the judge's figures per call, net of the empty cost."""

    kernel_ns: float
    reference_ns: float
    # The ratio with the empty cost as uncertain as the judge's measure leaves it (WALL_OWN_UNCERTAINTY).
    low_ratio: float
    high_ratio: float
    # What the kernel's process said its calls took, added up; the judge's raw measure of its request, and how
    # long the group could run for it; the calibrated cost of an empty request of as many calls.
    reported_ns: float
    measured_ns: float
    thawed_ns: float
    own_ns: float
    calls: int
    # What the pair spent of the case's budget, per call: both sides' CPU time net of the empty cost (the wall
    # clock where that decides the figures), never the time a kernel spends waiting.
    spent_ns: float = 0.0

    @property
    def ratio(self) -> float:
        return self.reference_ns / self.kernel_ns


class CaseJudge:
    def __init__(
        self,
        job: Mapping[str, Any],
        case: Mapping[str, Any],
        reference_run: Callable[..., Any],
        entrypoint: Callable[..., Any] | None,
        kernel: ServedLink,
        reference: ServedLink,
        overheads: Mapping[str, EmptyCost],
    ) -> None:
        self.job = job
        self.case = case
        self.device = job["device"]
        self.cuda = self.device.startswith("cuda")
        # The judge's wall clock decides the figures on CUDA (the work is the GPU's) and where the kernel's process
        # has no cgroup to measure; elsewhere its group's CPU time does.
        self.wall_clock = self.cuda or kernel.cpu_meter is None
        # On the CPU, a request's figure is its latency where the judge can read both serving threads' run-queue
        # waits (both sides alike, or neither): the larger of the group's CPU time and the wall clock less that
        # wait (`_net`). A kernel that sleeps or blocks in its calls is charged for it, one whose serving thread
        # waits behind its own busy threads is charged their CPU time.
        self.latency = not self.wall_clock and kernel.run_delay is not None and reference.run_delay is not None
        self.reference_run = reference_run
        self.entrypoint = entrypoint
        self.kernel = kernel
        self.reference = reference
        self.overheads = overheads
        self.protocol = protocol_named(job["protocol"])
        self.rounds = self.protocol.correctness_rounds
        self.input_rule = self.protocol.input_rule
        self.has_custom = any(spec["source"] == "custom" for spec in case["inputs"].values())
        self.worst = [0.0, 0.0]
        # The inputs the reference itself writes into: the definition's in-out buffers (a KV cache it updates in
        # place and returns as an output), which a solution may write into too. Every other input written into
        # is a REWARD_HACK.
        self.in_out: set[str] = set()

    def run(self) -> dict[str, Any]:
        try:
            self._correctness()
            return self._timed()
        except KernelFault as fault:
            return {**self._result(fault.status, fault.reason), "stop": fault.stop, "kernel_ended": fault.ended}
        except _CaseFailed as failure:
            return self._result(failure.status, failure.reason, failure.max_abs, failure.max_rel)

    # -- correctness ---------------------------------------------------------

    def _correctness(self) -> None:
        # The case's own seed goes into a round drawn at random, so that a kernel cannot tell the reproducible
        # round from the others (and answer wrong only where nobody would check it again).
        own_round = -1 if self.job.get("fresh_inputs") else _secret.randrange(self.rounds)
        seeds = [self.case["seed"] if index == own_round else _secret.getrandbits(63) for index in range(self.rounds)]
        upcoming = _Drawn(self._inputs, seeds[0])
        for index, seed in enumerate(seeds):
            where = f"round {index + 1} of {self.rounds}"
            where += f" (the case's own seed, {seed}): " if index == own_round else " (fresh inputs): "
            following = seeds[index + 1] if index + 1 < len(seeds) else None
            upcoming = self._checked_round(upcoming.inputs(), following, where)

    def _inputs(self, seed: int) -> dict[str, Any]:
        try:
            return build_inputs(self.case, self.device, self.entrypoint, rule=self.input_rule, seed=seed)
        except InputError as error:
            raise _CaseFailed(error.status, error.reason) from None
        except Exception as error:
            if needs_missing_cuda(error):
                raise self._lacks_cuda("the reference's input generator", error) from None
            status = failure_status(error, "INVALID_REFERENCE" if self.has_custom else "HARNESS_ERROR")
            raise _CaseFailed(status, "the inputs could not be built: " + failure_text(error)) from None

    def _expected(self, inputs: Mapping[str, Any]) -> list[Any]:
        copies = {name: clone(value) for name, value in inputs.items()}
        try:
            expected = outputs_as_list(self.reference_run(*copies.values()), list(self.case["outputs"]))
            _synchronize(self.device)
        except Exception as error:
            if needs_missing_cuda(error):
                raise self._lacks_cuda("the reference", error) from None
            if not self.cuda and (packed := self._cuda_only_inputs() or _cuda_only_dtypes_named(error)):
                raise self._lacks_cuda(f"the reference, computing with {packed} on the CPU,", error) from None
            raise _CaseFailed(
                failure_status(error, "INVALID_REFERENCE"), "the reference failed: " + failure_text(error)
            ) from None
        self.in_out |= changed_inputs(inputs, copies).keys()
        tolerance = self.case["tolerance"]
        allow_negative_inf = bool(tolerance.get("allow_negative_inf"))
        problem = reference_problem(expected, self.case["outputs"], allow_negative_inf, rule=self.protocol.correctness)
        if problem:
            raise _CaseFailed("INVALID_REFERENCE", problem)
        return expected

    def _cuda_only_inputs(self) -> str:
        """The inputs of dtypes torch computes with only on CUDA (harness.judge.tensors `CUDA_ONLY_DTYPES`), named."""
        found = [
            f"{name} ({spec['dtype']})"
            for name, spec in self.case["inputs"].items()
            if spec.get("dtype") in CUDA_ONLY_DTYPES
        ]
        return ", ".join(found)

    def _lacks_cuda(self, what: str, error: BaseException) -> _CaseFailed:
        # Neither the reference's fault nor the kernel's: this host cannot run the definition.
        return _CaseFailed(
            "HARNESS_ERROR",
            f"{what} needs a CUDA device, which this host has not (the evaluation runs on {self.device}): "
            + failure_text(error),
        )

    def _checked_round(self, inputs: dict[str, Any], following: int | None, where: str) -> _Drawn:
        """One correctness round on `inputs`; returns the next round's inputs, drawn from the seed `following`
        (none after the last round).

        Nothing of a round is timed, so on the CPU the judge works while the kernel's process computes: it runs
        the reference on the same inputs and draws the next round's, and a round takes about the longer of the
        two instead of their sum (the kernel's process, in a sandbox of its own, sees nothing of it)."""
        found: dict[str, Any] = {}

        def meanwhile() -> None:
            found["expected"] = self._expected(inputs)
            # A failure to draw the next round's inputs is the next round's: this round is checked first.
            found["next"] = _Drawn(self._inputs, following)

        if self.cuda:
            # One GPU for both: the reference's memory beside the kernel's could fail a kernel that fits alone.
            meanwhile()
        # Every round at the same addresses with new values: a kernel that keys anything on an address (a cache,
        # an output it filled once) answers a checked round with a stale result.
        (call,) = self.kernel.block(self.case, [inputs], slot=0, meanwhile=None if self.cuda else meanwhile).calls
        self._check(call, found["expected"], where)
        upcoming: _Drawn = found["next"]
        return upcoming

    def _check_inputs(self, call: Call, where: str) -> None:
        written = [where_written for name, where_written in call.changed_inputs.items() if name not in self.in_out]
        if written:
            raise _CaseFailed("REWARD_HACK", f"{where}the solution wrote into its inputs: {written[0]}")

    def _check(self, call: Call, expected: list[Any], where: str) -> None:
        self._check_inputs(call, where)
        if call.mismatch:
            raise _CaseFailed(call.mismatch[0], where + call.mismatch[1])
        outputs = [o.to(self.device) for o in call.outputs]
        verdict = compare(
            outputs,
            expected,
            self.case["outputs"],
            self.case["tolerance"],
            rule=self.protocol.correctness,
            definition_name=self.job.get("definition"),
        )
        if verdict.status != "PASSED":
            raise _CaseFailed(
                verdict.status, where + (verdict.reason or verdict.status), verdict.max_abs_error, verdict.max_rel_error
            )
        self.worst = [
            max(self.worst[0], verdict.max_abs_error or 0.0),
            max(self.worst[1], verdict.max_rel_error or 0.0),
        ]

    # -- timing --------------------------------------------------------------

    def _timed(self) -> dict[str, Any]:
        """Warm-up pairs, then timed pairs until the speedup settles or the case's budget ends."""
        size = self.overheads["kernel"].calls
        warmup, iterations = self.job["warmup"], self.job["iterations"]
        # At least two warm-up requests where there are two calls: the first carries the cold start (on CUDA, the
        # modules each first launch loads: milliseconds), which would size every timed request down to one call.
        blocks = _split(warmup, max(-(-warmup // size), min(warmup, 2))) if warmup else []
        warmed = [self._pair(count, "warm-up call", check_share=0.0) for count in blocks]
        most = size
        if warmed:
            size = _request_size(warmed[-1:], most)
        precision = self.job.get("precision")
        budget_ns = float(self.job.get("case_budget") or 0) * 1e9
        # The budget is spent in the judge's own measure of both sides, never in wall time: a kernel that sleeps,
        # blocks or waits on a helper between its calls costs its case no pairs, and so cannot end it after a few
        # pairs with an interval as wide as it likes. A kernel whose waiting never ends meets the evaluation's
        # time limit instead, which fails it.
        spent_ns = 0.0
        host_at_start = mark(self._served_cpu_ns())
        pairs: list[Pair] = []
        timed_calls = 0
        while True:
            pair = self._pair(size, "timed call", check_share=CHECKED_SHARE, first=timed_calls)
            pairs.append(pair)
            timed_calls += size
            spent_ns += pair.spent_ns * size
            # The warm-up, whose calls nothing checks, sized the first pair alone: from then on, the timed pairs'
            # own figures, which the kernel is judged by (`_request_size`).
            size = _request_size(pairs, most)
            if timed_calls < iterations or len(pairs) < MIN_PAIRS:
                continue
            if len(pairs) >= MAX_PAIRS or spent_ns > budget_ns:
                break
            if settled([pair.ratio for pair in pairs], precision):
                break
        host_busy = other_share(host_at_start, mark(self._served_cpu_ns()))
        self._check_reported(pairs)
        result = self._result("PASSED", None)
        result["host_busy"] = host_busy
        result["samples"] = [pair.kernel_ns for pair in pairs]
        result["reference_samples"] = [pair.reference_ns for pair in pairs]
        result["pair_ratios"] = [pair.ratio for pair in pairs]
        result["pair_ratio_bounds"] = [[pair.low_ratio, pair.high_ratio] for pair in pairs]
        result["calls_per_request"] = statistics.median_low(pair.calls for pair in pairs)
        return result

    def _pair(self, count: int, what: str, *, check_share: float, first: int = 0) -> Pair:
        """One request to each side on the same fresh inputs, in an order drawn for this pair, each measured
        by the judge while the other side is frozen."""
        input_sets = [self._inputs(_secret.getrandbits(63)) for _ in range(count)]
        if _secret.random() < 0.5:
            kernel = self._kernel_block(input_sets, what, check_share, first)
            reference = self._reference_block(input_sets)
        else:
            reference = self._reference_block(input_sets)
            kernel = self._kernel_block(input_sets, what, check_share, first)
        own = self._own_cost("kernel", count)
        kernel_ns = self._net(kernel, "kernel", count) / count
        reference_ns = self._net(reference, "reference", count) / count
        ratio = reference_ns / kernel_ns
        low = high = ratio
        if self.wall_clock:
            sides = ((self._measured(kernel), own), (self._measured(reference), self._own_cost("reference", count)))
            low, high = ratio_bounds(*sides, WALL_OWN_UNCERTAINTY)
        spent = kernel_ns + reference_ns
        if self.latency:
            spent = self._net(kernel, "kernel", count, cpu=True) + self._net(reference, "reference", count, cpu=True)
            spent /= count
        return Pair(
            kernel_ns=kernel_ns,
            reference_ns=reference_ns,
            # Bounds that hold the ratio itself, whatever the rounding (with no slack, both are the ratio).
            low_ratio=min(low, ratio),
            high_ratio=max(high, ratio),
            reported_ns=kernel.reported_ns,
            measured_ns=self._measured(kernel),
            thawed_ns=float(kernel.thawed_ns),
            own_ns=own,
            calls=count,
            spent_ns=spent,
        )

    def _served_cpu_ns(self) -> float | None:
        kernel, reference = self.kernel.cpu_ns(), self.reference.cpu_ns()
        return None if kernel is None or reference is None else float(kernel + reference)

    def _measured(self, block: Block) -> float:
        """The judge's measure of a request (`wall_clock`: which of its two)."""
        if self.wall_clock or block.cpu_ns is None:
            return float(block.wall_ns)
        return float(block.cpu_ns)

    def _own_cost(self, side: str, calls: int) -> float:
        empty = self.overheads[side]
        return empty.wall_ns(calls) if self.wall_clock else empty.cpu_ns(calls)

    def _net(self, block: Block, side: str, calls: int, *, cpu: bool = False) -> float:
        """A request's figure: the judge's measure less the calibrated cost of an empty request of as many calls,
        never below a small share of that cost. With `latency`, the larger of that and the request's latency less
        the empty request's (`cpu`: the CPU time's alone)."""
        figure = net_ns(self._measured(block), self._own_cost(side, calls))
        if self.latency and not cpu and block.latency_ns is not None:
            figure = max(figure, net_ns(float(block.latency_ns), self.overheads[side].latency_ns(calls)))
        return figure

    def _kernel_block(self, input_sets: list[dict[str, Any]], what: str, check_share: float, first: int) -> Block:
        """A request of calls on fresh inputs; after it, each call's outputs checked with probability `check_share`."""
        block = self.kernel.block(self.case, input_sets)
        for number, call in enumerate(block.calls, start=first + 1):
            where = f"{what} {number}, while being timed: "
            # Drawn after the calls returned: the kernel's process cannot know which of its calls are checked.
            if _secret.random() < check_share:
                self._check(call, self._expected(call.inputs), where)
            else:
                self._check_inputs(call, where)
                if call.mismatch:
                    raise _CaseFailed(call.mismatch[0], where + call.mismatch[1])
        return block

    def _reference_block(self, input_sets: list[dict[str, Any]]) -> Block:
        """The same calls, served by the reference's process and measured as the kernel's are."""
        if self.cuda:
            self._wait_for_idle_gpu()
        try:
            return self.reference.block(self.case, input_sets, figures_only=True)
        except KernelFault as fault:
            raise _CaseFailed("INVALID_REFERENCE", f"timing the reference: {fault.reason}") from None

    def _wait_for_idle_gpu(self) -> None:
        """A frozen process's queued GPU work still runs: work the kernel's process left behind would slow the
        reference down beside it. The reference's process times a small probe; while it is slow, something else
        holds the GPU, and on a worker's own GPU that can only be the kernel's process."""
        calibrated = self.overheads["reference"].probe_ns
        deadline = time.monotonic() + PROBE_PATIENCE_S
        while True:
            probe = self.reference.probe()
            if probe <= PROBE_FACTOR * calibrated + PROBE_MARGIN_NS:
                return
            if time.monotonic() > deadline:
                raise _CaseFailed(
                    "REWARD_HACK",
                    f"the GPU was still busy {PROBE_PATIENCE_S:g} s after the kernel's calls returned (a probe "
                    f"took {_us(probe)}, {_us(calibrated)} when idle): work left queued to slow the reference",
                )
            time.sleep(0.01)

    def _check_reported(self, pairs: Sequence[Pair]) -> None:
        """The kernel's own times decide nothing, but its split must not disagree with the judge's measure: on
        the CPU, reported times that leave far more CPU time unexplained than they cover are a lie."""
        if self.wall_clock:
            return
        cpus = max(int(self.job.get("cpus") or 1), 1)
        reported = cpus * sum(pair.reported_ns for pair in pairs)
        measured = sum(pair.measured_ns for pair in pairs)
        spinning = (cpus - 1) * sum(max(pair.thawed_ns - pair.reported_ns, 0.0) for pair in pairs)
        unexplained = measured - OWN_COST_ALLOWANCE * sum(pair.own_ns for pair in pairs) - spinning - reported
        if unexplained > UNEXPLAINED_FACTOR * reported:
            calls = sum(pair.calls for pair in pairs)
            raise _CaseFailed(
                "REWARD_HACK",
                f"the kernel's process reported {_us(reported / cpus / calls)} per timed call, but its requests used "
                f"{_us(measured / calls)} of CPU per call, {_us(sum(p.own_ns for p in pairs) / calls)} of it the "
                "harness's own: it reported a time it did not spend",
            )

    def _result(
        self, status: str, reason: str | None, max_abs: float | None = None, max_rel: float | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = {"uuid": self.case["uuid"], "status": status, "reason": reason}
        if status == "PASSED":
            max_abs, max_rel = self.worst
        result["max_abs_error"], result["max_rel_error"] = max_abs, max_rel
        return result


class _Drawn:
    """A round's inputs drawn ahead of the round, or the failure to draw them, raised when the round asks."""

    def __init__(self, draw: Callable[[int], dict[str, Any]], seed: int | None) -> None:
        self.drawn: dict[str, Any] | None = None
        self.failure: _CaseFailed | None = None
        if seed is None:
            return
        try:
            self.drawn = draw(seed)
        except _CaseFailed as failure:
            self.failure = failure

    def inputs(self) -> dict[str, Any]:
        if self.failure is not None:
            raise self.failure
        assert self.drawn is not None, "no round follows"
        return self.drawn


class _CaseFailed(Exception):  # noqa: N818 (a verdict, not an error)
    def __init__(self, status: str, reason: str, max_abs: float | None = None, max_rel: float | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.max_abs = max_abs
        self.max_rel = max_rel


def net_ns(measured: float, own: float, own_scale: float = 1.0) -> float:
    """The judge's measure of a request less `own_scale` times the harness's own cost of it, never below a small
    share of that cost: at the noise of the calibration a figure means nothing, and the interval says so."""
    return max(measured - own_scale * own, NET_FLOOR_SHARE * own, 1.0)


def ratio_bounds(kernel: tuple[float, float], reference: tuple[float, float], slack: float) -> tuple[float, float]:
    """The pair's ratio (the reference's figure over the kernel's) at the two ends of what the harness's own cost
    of each request (measured, own) may have been, `slack` either way (WALL_OWN_UNCERTAINTY)."""
    (kernel_measured, kernel_own), (reference_measured, reference_own) = kernel, reference
    low = net_ns(reference_measured, reference_own, 1 + slack) / net_ns(kernel_measured, kernel_own, 1 - slack)
    high = net_ns(reference_measured, reference_own, 1 - slack) / net_ns(kernel_measured, kernel_own, 1 + slack)
    return low, high


def _request_size(pairs: Sequence[Pair], most: int) -> int:
    """Calls for the next request of each side: as many as make about REQUEST_TARGET_NS of work on the slower side
    by the medians of `pairs`' figures per call, within `most`. Medians: to shrink the requests (where the judge's
    cost of a request, which a kernel's own request loop could undercut, weighs most), a kernel must be as slow as
    that in half its pairs, where its figures are what it is judged by."""
    slower = max(statistics.median(p.kernel_ns for p in pairs), statistics.median(p.reference_ns for p in pairs))
    return max(min(-(-REQUEST_TARGET_NS // max(int(slower), 1)), most), 1)


def _split(total: int, count: int) -> list[int]:
    base, extra = divmod(total, count)
    return [base + (1 if index < extra else 0) for index in range(count)]


def _cuda_only_dtypes_named(error: BaseException) -> str:
    """The dtypes torch computes with only on CUDA that an error names: a reference may make such tensors itself
    (SOL-ExecBench's 031_nvfp4_grouped_query_attention_with_kv_repeat quantizes its bf16 inputs to packed
    four-bit floats, and torch._scaled_mm on the CPU says "Got mat_a.dtype()=Float4_e2m1fn_x2")."""
    message = str(error).lower()
    return ", ".join(sorted(name for name in CUDA_ONLY_DTYPES if name in message))


def _synchronize(device: str) -> None:
    # CUDA reports a kernel's failure at the next synchronisation: make it this call's.
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def _us(nanoseconds: float) -> str:
    return f"{nanoseconds / 1000:.1f} µs"
