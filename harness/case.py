"""One case, judged: correctness rounds on fresh inputs, then the kernel and the reference timed in turns.

Inside the judge. The kernel's process is reached only through `KernelLink`:
inputs go into the exchange, the call goes down a pipe, the time comes back,
and the outputs are read from the exchange, copied out at once, and checked
here. Every call, checked or timed, looks the same from the kernel's side.

- Correctness: `correctness_rounds` rounds (the protocol's), each on inputs
  from a fresh seed (the first from the case's own seed, so a failure there is
  reproducible), every output checked, all at the same addresses: whatever a
  kernel keys on an address is stale by the second round.
- Timing: warm-up calls, then the timed calls in blocks, each block followed
  by as many timed calls of the reference (here, on the judge's own clock),
  so that a drift of the host shows in the reference's blocks. Every call
  gets inputs from a fresh secret seed at a fresh address and outputs reset,
  and after each call the judge draws whether to check it: a kernel cannot
  know which of its timed calls will be checked.
- The clock check: on the CPU the judge reads the kernel's CPU time (its
  cgroup's counter, exact for every thread) around each block. A call's CPU
  time can exceed its wall time only by the CPUs its quota allows, so CPU time
  beyond `cpus` × the reported time, by more than the harness's own cost
  (measured before the solution was loaded) and a share of the reported time,
  in most blocks, is a reported time the kernel did not spend: REWARD_HACK
  (`_check_clock`). After the timed calls, CPU time spent while the kernel
  should be idle is work left running after its calls returned: REWARD_HACK
  as well. On CUDA the judge's own wall clock around each block bounds the
  reported GPU time instead.
"""

from __future__ import annotations

import contextlib
import mmap
import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from harness.cgroups import read_cpu_ns
from harness.checking import compare, outputs_as_list, reference_problem
from harness.exchange import ChannelError, LineChannel, Placement, placements, slot_bytes
from harness.failures import failure_status, failure_text
from harness.protocols import protocol_named
from harness.tensors import DTYPES, InputError, build_inputs, changed_input, clone
from harness.timing import time_reference

# The share of timed calls whose outputs are checked, drawn after each call.
CHECKED_SHARE = 0.25
# Calibration blocks per case, before the solution is loaded.
CALIBRATION_BLOCKS = 5
# Interleaved blocks of timed calls (solution, then reference), at most.
TIMING_BLOCKS = 5
# CPU time the kernel may spend per block beyond `cpus` x its reported time: this many times the
# calibrated cost of a block of empty calls, plus a fixed margin for the accounting itself.
OVERHEAD_FACTOR = 2.0
OVERHEAD_MARGIN_NS = 100_000
# And this share of the reported time: contention on a busy host grows the harness's cost around each call
# (one honest block, beside two busy loops, spent 7 % more CPU than it reported, past 2x its calibrated cost).
RELATIVE_SLACK = 0.25
# After the timed calls: a pause for spinning runtimes to settle, then a window in which the kernel's
# process, blocked on its pipe, may use this much CPU at most.
IDLE_SETTLE_S, IDLE_WINDOW_S, IDLE_CPU_NS = 0.02, 0.05, 10_000_000
# On CUDA: the judge's wall time per block beyond the reported GPU time, in multiples of an empty block's, plus this.
WALL_FACTOR, WALL_MARGIN_NS = 4.0, 1_000_000

_secret = random.SystemRandom()


class KernelFault(Exception):  # noqa: N818 (a fault, not an error of the harness)
    """The kernel's process failed or broke the protocol: a status of its own, and the evaluation stops."""

    def __init__(self, status: str, reason: str, *, stop: bool = True, ended: bool = False) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.stop = stop
        # The kernel's process is gone: the parent, which saw how it ended, says so.
        self.ended = ended


@dataclass
class Call:
    """What one call of the kernel gave: its reported time and the outputs as found in the exchange."""

    inputs: dict[str, Any]
    reported_ns: float
    outputs: list[Any]
    # Why the outputs cannot be compared (a count, shape or dtype off), as a verdict, else None.
    mismatch: tuple[str, str] | None = None
    changed_input: str | None = None


@dataclass
class Block:
    """Calls run back to back in one request, with the judge's own measures of the whole block."""

    calls: list[Call]
    cpu_ns: int | None
    wall_ns: int

    @property
    def reported_ns(self) -> float:
        return sum(call.reported_ns for call in self.calls)


@dataclass
class KernelLink:
    channel: LineChannel
    exchange: mmap.mmap
    cpu_meter: int | None
    dps: bool
    sequence: int = 0
    slot: int = 0
    timer: str = ""

    def load(self) -> list[str] | None:
        reply = self._request({"op": "load"})
        # A label, not a measure: the kernel's process says which clock it times with.
        self.timer = str(reply.get("timer"))[:40]
        error = reply.get("error")
        if error is None:
            return None
        if isinstance(error, list) and len(error) == 2 and all(isinstance(part, str) for part in error):
            status = error[0] if error[0] in ("COMPILE_ERROR", "RUNTIME_ERROR", "OUT_OF_MEMORY") else "COMPILE_ERROR"
            return [status, error[1][:4000]]
        return ["REWARD_HACK", "the kernel's process answered the load with something that is not a reply"]

    def exit(self) -> None:
        with contextlib.suppress(ChannelError):
            self.channel.send({"op": "exit"})

    def cpu_ns(self) -> int | None:
        return None if self.cpu_meter is None else read_cpu_ns(self.cpu_meter)

    def slots(self, case: Mapping[str, Any]) -> int:
        return max(len(self.exchange) // slot_bytes(case), 1)

    def block(
        self,
        case: Mapping[str, Any],
        input_sets: Sequence[Mapping[str, Any]],
        *,
        empty: bool = False,
        slot: int | None = None,
    ) -> Block:
        """Write each call's inputs into the next slots (or into `slot`, for a single call), reset their outputs,
        run them, and read back what was left."""
        if len(input_sets) >= self.slots(case) or (slot is not None and len(input_sets) != 1):
            raise ValueError("a block of more calls than the exchange has slots for, less one")
        requests, prepared = [], []
        for inputs in input_sets:
            self.slot = (self.slot + 1) % self.slots(case) if slot is None else slot % self.slots(case)
            request, originals, places = self._place(case, inputs, self.slot)
            requests.append(request)
            prepared.append((inputs, originals, places))
        cpu_before, wall_before = self.cpu_ns(), time.perf_counter_ns()
        reply = self._request({"op": "calls", "calls": requests, "empty": empty})
        wall = time.perf_counter_ns() - wall_before
        cpu_after = self.cpu_ns()
        results = reply.get("results")
        if not isinstance(results, list) or not 0 < len(results) <= len(requests):
            raise KernelFault("REWARD_HACK", "the kernel's process replied to its calls with something else")
        calls = [self._read(case, result, *setup) for result, setup in zip(results, prepared, strict=False)]
        if len(calls) < len(requests):
            raise KernelFault("REWARD_HACK", "the kernel's process answered fewer calls than it was given")
        cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
        return Block(calls=calls, cpu_ns=cpu, wall_ns=wall)

    def staged(self, case: Mapping[str, Any], inputs: Mapping[str, Any]) -> list[Any]:
        """A call's arguments written into the next slot as the kernel's are, for the reference to be timed on:
        the same memory, written by this process, at a slot's distance (in memory exchanged between processes
        and in a process's own, the same reference measured 1.4x apart)."""
        self.slot = (self.slot + 1) % self.slots(case)
        _, _, (places, _) = self._place(case, inputs, self.slot)
        return [self._view(places[name]) if name in places else value for name, value in inputs.items()]

    def _place(
        self, case: Mapping[str, Any], inputs: Mapping[str, Any], slot: int
    ) -> tuple[dict[str, Any], dict[str, torch.Tensor], tuple[dict[str, Placement], list[Placement]]]:
        tensor_names = [name for name, value in inputs.items() if isinstance(value, torch.Tensor)]
        input_places, output_places = placements(case, slot, tensor_names)
        places = dict(zip(tensor_names, input_places, strict=True))
        originals = {}
        for name, place in places.items():
            originals[name] = inputs[name].detach().to("cpu")
            self._view(place).copy_(originals[name].reshape(place.shape))
        for place in output_places:
            _reset(self._view(place))
        arguments = [
            {"offset": places[name].offset, "shape": places[name].shape, "dtype": places[name].dtype}
            if name in places
            else {"value": value}
            for name, value in inputs.items()
        ]
        request = {"args": arguments, "outs": [[p.offset, p.shape, p.dtype, p.nbytes] for p in output_places]}
        return request, originals, (places, output_places)

    def _read(
        self,
        case: Mapping[str, Any],
        result: Any,
        inputs: Mapping[str, Any],
        originals: Mapping[str, torch.Tensor],
        places: tuple[dict[str, Placement], list[Placement]],
    ) -> Call:
        input_places, output_places = places
        # Copied out at once: what the kernel writes into the exchange later changes nothing.
        found = [self._view(place).clone() for place in output_places]
        views = {name: self._view(place) for name, place in input_places.items()}
        if not isinstance(result, dict):
            raise KernelFault("REWARD_HACK", "the kernel's process replied to a call with something else")
        if result.get("error") is not None:
            raise _fault_from(result["error"])
        reported = result.get("ns")
        if not isinstance(reported, (int, float)) or isinstance(reported, bool) or not 0 <= reported < 1e15:
            raise KernelFault(
                "REWARD_HACK", f"the kernel's process reported a time that is not one: {str(reported)[:80]}"
            )
        call = Call(
            inputs=dict(inputs),
            reported_ns=float(reported),
            outputs=found,
            changed_input=changed_input(originals, views),
        )
        if not self.dps:
            call.mismatch = _returned_mismatch(result, case, output_places)
        return call

    def _request(self, message: dict[str, Any]) -> dict[str, Any]:
        self.sequence += 1
        try:
            self.channel.send({"seq": self.sequence, **message})
            reply = self.channel.receive()
        except ChannelError as error:
            if "closed" in str(error):
                raise KernelFault("RUNTIME_ERROR", "the kernel's process ended during this call", ended=True) from None
            raise KernelFault("REWARD_HACK", f"the kernel's process broke the call protocol: {error}") from None
        if reply.get("seq") != self.sequence:
            raise KernelFault("REWARD_HACK", "the kernel's process wrote a reply to no call (forged or out of order)")
        return reply

    def _view(self, place: Placement) -> torch.Tensor:
        dtype = DTYPES[place.dtype]
        count = place.nbytes // max(dtype.itemsize, 1)
        if count == 0:
            return torch.empty(place.shape, dtype=dtype)
        return torch.frombuffer(self.exchange, dtype=dtype, count=count, offset=place.offset).view(place.shape)


def _fault_from(error: Any) -> KernelFault:
    if isinstance(error, list) and len(error) == 2 and all(isinstance(part, str) for part in error):
        status = error[0] if error[0] in _KERNEL_STATUSES else "RUNTIME_ERROR"
        # The kernel's own failure: the evaluation goes on with the next case unless it tampered.
        return KernelFault(status, error[1][:4000], stop=status == "REWARD_HACK")
    return KernelFault("REWARD_HACK", "the kernel's process sent an error that is not one")


_KERNEL_STATUSES = frozenset({"RUNTIME_ERROR", "OUT_OF_MEMORY", "REWARD_HACK", "COMPILE_ERROR"})


def _returned_mismatch(
    reply: Mapping[str, Any], case: Mapping[str, Any], places: Sequence[Placement]
) -> tuple[str, str] | None:
    described = reply.get("returned")
    count = reply.get("count")
    if not isinstance(described, list) or not isinstance(count, int):
        return ("REWARD_HACK", "the kernel's process replied without describing its outputs")
    if count != len(places):
        return ("INCORRECT_SHAPE", f"the solution returned {count} outputs, expected {len(places)}")
    for (name, spec), place, item in zip(case["outputs"].items(), places, described, strict=False):
        if not isinstance(item, dict):
            return ("REWARD_HACK", "the kernel's process described an output oddly")
        if "kind" in item and spec["shape"] is not None:
            return ("INCORRECT_SHAPE", f"output {name!r}: got {str(item['kind'])[:40]}, expected a tensor")
        if "kind" in item:
            continue
        if item.get("shape") != place.shape and not (spec["shape"] is None and item.get("shape") == []):
            return ("INCORRECT_SHAPE", f"output {name!r}: shape {str(item.get('shape'))[:80]}, expected {place.shape}")
        if item.get("dtype") != place.dtype:
            return (
                "INCORRECT_DTYPE",
                f"output {name!r}: dtype torch.{str(item.get('dtype'))[:40]}, expected torch.{place.dtype}",
            )
    return None


def _reset(view: torch.Tensor) -> None:
    """A pattern no correct kernel leaves: NaN, an integer's largest value, all-ones bytes for packed floats."""
    if view.dtype in (torch.float4_e2m1fn_x2, torch.float8_e4m3fn, torch.float8_e5m2):
        view.view(torch.uint8).fill_(0xFF)
    elif view.is_floating_point() or view.is_complex():
        view.fill_(float("nan"))
    elif view.dtype == torch.bool:
        view.fill_(True)
    else:
        view.fill_(torch.iinfo(view.dtype).max)


def block_size(kernel: KernelLink, case: Mapping[str, Any], iterations: int) -> int:
    """Calls per request while timing: a block of the interleaving, as many as the exchange has slots for."""
    return max(min(-(-iterations // TIMING_BLOCKS), kernel.slots(case) - 1), 1)


def calibrate(kernel: KernelLink, case: Mapping[str, Any], iterations: int) -> dict[str, float]:
    """The harness's own cost of one block of this case, CPU and wall, as medians over blocks of empty calls."""
    inputs = {
        name: spec["value"]
        if spec["source"] == "scalar"
        else torch.zeros(spec["shape"] or [], dtype=DTYPES[spec["dtype"]])
        for name, spec in case["inputs"].items()
    }
    size = block_size(kernel, case, iterations)
    blocks = [kernel.block(case, [inputs] * size, empty=True) for _ in range(CALIBRATION_BLOCKS)]
    cpu = [block.cpu_ns for block in blocks if block.cpu_ns is not None]
    return {
        "cpu_ns": statistics.median(cpu) if cpu else 0.0,
        "wall_ns": statistics.median(block.wall_ns for block in blocks),
        "calls": size,
    }


class CaseJudge:
    def __init__(
        self,
        job: Mapping[str, Any],
        case: Mapping[str, Any],
        reference_run: Callable[..., Any],
        entrypoint: Callable[..., Any] | None,
        kernel: KernelLink,
        overhead: Mapping[str, float],
    ) -> None:
        self.job = job
        self.case = case
        self.device = job["device"]
        self.reference_run = reference_run
        self.entrypoint = entrypoint
        self.kernel = kernel
        self.overhead = overhead
        self.protocol = protocol_named(job["protocol"])
        self.rounds = self.protocol.correctness_rounds
        self.input_rule = self.protocol.input_rule
        self.has_custom = any(spec["source"] == "custom" for spec in case["inputs"].values())
        self.worst = [0.0, 0.0]

    def run(self) -> dict[str, Any]:
        try:
            for round_index in range(self.rounds):
                own = round_index == 0 and not self.job.get("fresh_inputs")
                seed = self.case["seed"] if own else _secret.getrandbits(63)
                # The first round's inputs are the case's own, reproducible: a failure there needs no qualifier.
                where = f"round {round_index + 1} of {self.rounds}: " if round_index else ""
                self._checked_call(seed, where)
            return self._timed()
        except KernelFault as fault:
            return {**self._result(fault.status, fault.reason), "stop": fault.stop, "kernel_ended": fault.ended}
        except _CaseFailed as failure:
            return self._result(failure.status, failure.reason, failure.max_abs, failure.max_rel)

    # -- correctness ---------------------------------------------------------

    def _inputs(self, seed: int) -> dict[str, Any]:
        try:
            return build_inputs(self.case, self.device, self.entrypoint, rule=self.input_rule, seed=seed)
        except InputError as error:
            raise _CaseFailed(error.status, error.reason) from None
        except Exception as error:
            status = failure_status(error, "INVALID_REFERENCE" if self.has_custom else "HARNESS_ERROR")
            raise _CaseFailed(status, "the inputs could not be built: " + failure_text(error)) from None

    def _expected(self, inputs: Mapping[str, Any]) -> list[Any]:
        try:
            expected = outputs_as_list(
                self.reference_run(*[clone(v) for v in inputs.values()]), list(self.case["outputs"])
            )
            _synchronize(self.device)
        except Exception as error:
            raise _CaseFailed(
                failure_status(error, "INVALID_REFERENCE"), "the reference failed: " + failure_text(error)
            ) from None
        tolerance = self.case["tolerance"]
        allow_negative_inf = bool(tolerance.get("allow_negative_inf"))
        problem = reference_problem(expected, self.case["outputs"], allow_negative_inf, rule=self.protocol.correctness)
        if problem:
            raise _CaseFailed("INVALID_REFERENCE", problem)
        return expected

    def _checked_call(self, seed: int, where: str) -> None:
        inputs = self._inputs(seed)
        expected = self._expected(inputs)
        # Every round at the same addresses with new values: a kernel that keys anything on an address (a cache,
        # an output it filled once) answers a checked round with a stale result.
        (call,) = self.kernel.block(self.case, [inputs], slot=0).calls
        self._check(call, expected, where)

    def _check(self, call: Call, expected: list[Any], where: str) -> None:
        if call.changed_input:
            raise _CaseFailed("REWARD_HACK", f"{where}the solution wrote into its inputs: {call.changed_input}")
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
        try:
            blocks, reference_blocks = self._timing()
        except _ClockFailed:
            # Timed again before it counts, as a correctness failure is confirmed: a forged clock fails every
            # time, a burst of the host's (or of a garbage collection outside the calls) rarely twice running.
            blocks, reference_blocks = self._timing()
        result = self._result("PASSED", None)
        result["samples"] = [call.reported_ns for block in blocks for call in block.calls]
        result["reference_samples"] = [sample for block in reference_blocks for sample in block]
        if len(reference_blocks) > 1:
            # Halves, not the first and last blocks alone: a block of ten samples on a busy host is mostly noise.
            half = len(reference_blocks) // 2
            early = statistics.median(sample for block in reference_blocks[:half] for sample in block)
            late = statistics.median(sample for block in reference_blocks[-half:] for sample in block)
            result["reference_drift"] = late / early if early > 0 else None
        return result

    def _timing(self) -> tuple[list[Block], list[list[float]]]:
        """Warm-up, then the kernel's timed blocks interleaved with the reference's, the clock checked."""
        warmup, iterations = self.job["warmup"], self.job["iterations"]
        size = int(self.overhead["calls"])
        for count in _blocks(warmup, -(-warmup // size)) if warmup else []:
            self._block(count, "a warm-up call", check_share=0.0)
        if warmup:
            self._time_references(warmup)
        blocks: list[Block] = []
        reference_blocks: list[list[float]] = []
        for count in _blocks(iterations, -(-iterations // size)):
            blocks.append(self._block(count, "timed call", check_share=CHECKED_SHARE, first=len(blocks) * size))
            reference_blocks.append(self._time_references(count))
        self._check_clock(blocks)
        return blocks, reference_blocks

    def _block(self, count: int, what: str, *, check_share: float, first: int = 0) -> Block:
        """A block of calls on fresh inputs; after it, each call's outputs checked with probability `check_share`."""
        input_sets = [self._inputs(_secret.getrandbits(63)) for _ in range(count)]
        block = self.kernel.block(self.case, input_sets)
        for number, call in enumerate(block.calls, start=first + 1):
            where = f"{what} {number}, while being timed: "
            # Drawn after the calls returned: the kernel's process cannot know which of its calls are checked.
            if _secret.random() < check_share:
                self._check(call, self._expected(call.inputs), where)
            elif call.changed_input:
                raise _CaseFailed("REWARD_HACK", f"{where}the solution wrote into its inputs: {call.changed_input}")
            elif call.mismatch:
                raise _CaseFailed(call.mismatch[0], where + call.mismatch[1])
        return block

    def _time_references(self, count: int) -> list[float]:
        """The reference timed as the kernel is: every call's inputs built first (on the CPU, in the exchange's
        slots, as the kernel's are), then the calls back to back."""
        input_sets = [self._inputs(_secret.getrandbits(63)) for _ in range(count)]
        if self.device.startswith("cuda"):
            argument_sets = [list(inputs.values()) for inputs in input_sets]
        else:
            argument_sets = [self.kernel.staged(self.case, inputs) for inputs in input_sets]
        try:
            return [time_reference(self.reference_run, arguments, self.device) for arguments in argument_sets]
        except Exception as error:
            reason = "timing the reference: " + failure_text(error)
            raise _CaseFailed(failure_status(error, "INVALID_REFERENCE"), reason) from None

    def _check_clock(self, blocks: Sequence[Block]) -> None:
        """The kernel's reported times against the judge's measures of each block (see the module's doc).

        A block is over when what the judge measured exceeds the reported time by more than the harness's own
        cost and a share of the reported time; the case is a REWARD_HACK when most blocks are over. A forged
        clock makes every block over; contention on a busy host (which grows the harness's cost around each
        call) makes some, rarely most, and never by the share a forger gains.
        """
        cuda = self.device.startswith("cuda")
        if not cuda and any(block.cpu_ns is None for block in blocks):
            return
        cpus = 1 if cuda else max(int(self.job.get("cpus") or 1), 1)
        own, margin, factor = (
            (self.overhead["wall_ns"], WALL_MARGIN_NS, WALL_FACTOR)
            if cuda
            else (self.overhead["cpu_ns"], OVERHEAD_MARGIN_NS, OVERHEAD_FACTOR)
        )
        spent = [float(block.wall_ns if cuda else block.cpu_ns or 0) for block in blocks]
        claimed = [cpus * block.reported_ns for block in blocks]
        over = [
            used - claim - (factor * own + margin + RELATIVE_SLACK * claim)
            for used, claim in zip(spent, claimed, strict=True)
        ]
        if statistics.median(over) > 0:
            calls = sum(len(block.calls) for block in blocks)
            measure = "the judge's clock saw" if cuda else f"its processes used of CPU on {cpus} CPU(s)"
            raise _ClockFailed(
                "REWARD_HACK",
                f"the kernel's process reported {_us(sum(claimed) / cpus / calls)} per timed call, but {measure} "
                f"{_us(sum(spent) / calls)} per call, in {sum(o > 0 for o in over)} of {len(over)} blocks more than "
                f"the harness's own cost and {RELATIVE_SLACK:.0%} of the reported time: a time it did not spend",
            )
        if not cuda:
            self._check_idle()

    def _check_idle(self) -> None:
        time.sleep(IDLE_SETTLE_S)
        before = self.kernel.cpu_ns()
        time.sleep(IDLE_WINDOW_S)
        after = self.kernel.cpu_ns()
        if before is not None and after is not None and after - before > IDLE_CPU_NS:
            raise _ClockFailed(
                "REWARD_HACK",
                f"the solution kept working after its calls returned ({_us(after - before)} of CPU "
                f"in {IDLE_WINDOW_S * 1000:.0f} ms between calls)",
            )

    def _result(
        self, status: str, reason: str | None, max_abs: float | None = None, max_rel: float | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = {"uuid": self.case["uuid"], "status": status, "reason": reason}
        if status == "PASSED":
            max_abs, max_rel = self.worst
        result["max_abs_error"], result["max_rel_error"] = max_abs, max_rel
        return result


class _CaseFailed(Exception):  # noqa: N818 (a verdict, not an error)
    def __init__(self, status: str, reason: str, max_abs: float | None = None, max_rel: float | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.max_abs = max_abs
        self.max_rel = max_rel


class _ClockFailed(_CaseFailed):
    """The kernel's reported times do not stand against the judge's measures: a REWARD_HACK once confirmed."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(status, f"{reason} (in each of two timings)")


def _blocks(total: int, count: int) -> list[int]:
    base, extra = divmod(total, count)
    return [base + (1 if index < extra else 0) for index in range(count)]


def _synchronize(device: str) -> None:
    # CUDA reports a kernel's failure at the next synchronisation: make it this call's.
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def _us(nanoseconds: float) -> str:
    return f"{nanoseconds / 1000:.1f} µs"
