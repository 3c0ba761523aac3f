"""One case, judged: correctness rounds on fresh inputs, then the kernel and the reference timed in pairs.

Inside the judge. The kernel's process and the reference's are reached only
through a `ServedLink` each: inputs go into that process's exchange, the call
goes down a pipe, and the outputs are read from the exchange, copied out at
once, and checked here. Every call, checked or timed, looks the same from the
served side.

- Correctness: `correctness_rounds` rounds (the protocol's), each on inputs
  from a fresh seed, except one round drawn at random that uses the case's own
  seed (so a failure there is reproducible; the kernel cannot tell which round
  it is), every output checked, all at the same addresses: whatever a kernel
  keys on an address is stale by the second round.
- Timing: pairs of requests, one to each side on the same fresh inputs, in an
  order drawn per pair, until the speedup's 95 % interval is within the
  precision asked for or the case's time budget ends (`_timed`). The figure of
  a request is the judge's own measure: on the CPU, the CPU time of the served
  process's cgroup over the request, read while the group is frozen; on CUDA
  or without a cgroup, the judge's wall clock around it; either less the
  calibrated cost of an empty request, measured before anything was loaded.
  The speedup is the median of the pairs' ratios, with a sign-test interval.
- Between its requests each served group is frozen: the kernel cannot work
  while the judge stages inputs, checks outputs or times the reference.
- The times the kernel's process reports are detail: where they add up to
  less than half of what the judge measured, the kernel's process lied about
  its time, a REWARD_HACK (`_check_reported`).
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

from harness.cgroups import FreezeError, Freezer, read_cpu_ns
from harness.checking import compare, outputs_as_list, reference_problem
from harness.exchange import ChannelError, LineChannel, Placement, placements, slot_bytes
from harness.failures import failure_status, failure_text
from harness.protocols import protocol_named
from harness.stats import MAX_PAIRS, MIN_PAIRS, settled
from harness.tensors import DTYPES, InputError, build_inputs, changed_input, clone

# The share of timed calls whose outputs are checked, drawn after each call.
CHECKED_SHARE = 0.25
# Calibration requests per case and side, before anything is loaded (the first, a cold start, is dropped).
CALIBRATION_REQUESTS = 7
# A request's figure is never taken below this share of its empty cost: at the noise of the calibration a
# ratio means nothing, and the interval it widens says so.
NET_FLOOR_SHARE = 0.05
# The kernel's reported times may not add up to less than this share of what the judge measured.
REPORTED_SHARE = 0.5
# On CUDA, a request faster than this share of an empty request (whose calls each flush the L2) skipped work
# that every call must do.
FLUSH_SHARE = 0.9

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
    """Calls run back to back in one request, with the judge's own measures of the whole request."""

    calls: list[Call]
    # The served group's CPU time over the request (read frozen, before and after), where it has a group.
    cpu_ns: int | None
    wall_ns: int

    @property
    def reported_ns(self) -> float:
        return sum(call.reported_ns for call in self.calls)


@dataclass
class ServedLink:
    """The judge's side of one served process (the kernel's or the reference's): its exchange, its pipes, and
    its cgroup's CPU meter and freezer where it has a group."""

    channel: LineChannel
    exchange: mmap.mmap
    cpu_meter: int | None
    dps: bool
    freezer: Freezer | None = None
    sequence: int = 0
    slot: int = 0
    timer: str = ""

    @classmethod
    def of(cls, descriptors: Mapping[str, Any], dps: bool) -> ServedLink:
        from harness.exchange import map_exchange

        freezer = Freezer(descriptors["freeze"], descriptors["frozen"]) if "freeze" in descriptors else None
        link = cls(
            LineChannel(descriptors["replies"], descriptors["calls"]),
            map_exchange(descriptors["exchange"]),
            descriptors.get("cpu_meter"),
            dps,
            freezer,
        )
        link.freeze()
        return link

    @property
    def measure(self) -> str:
        """What the judge measures a request of this process by."""
        return "cpu" if self.cpu_meter is not None and self.freezer is not None else "wall"

    def freeze(self) -> None:
        if self.freezer is None:
            return
        try:
            self.freezer.freeze()
        except (FreezeError, OSError) as error:
            raise KernelFault("RUNTIME_ERROR", f"the process could not be frozen between requests: {error}") from None

    def thaw(self) -> None:
        if self.freezer is not None:
            self.freezer.thaw()

    def load(self) -> list[str] | None:
        self.thaw()
        try:
            reply = self._request({"op": "load"})
        finally:
            self.freeze()
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
        with contextlib.suppress(ChannelError, OSError):
            self.thaw()
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
        # Read frozen, so the counter is settled: the group runs only between the thaw and the freeze.
        cpu_before = self.cpu_ns()
        self.thaw()
        wall_before = time.perf_counter_ns()
        reply = self._request({"op": "calls", "calls": requests, "empty": empty})
        wall = time.perf_counter_ns() - wall_before
        self.freeze()
        cpu_after = self.cpu_ns()
        results = reply.get("results")
        if not isinstance(results, list) or not 0 < len(results) <= len(requests):
            raise KernelFault("REWARD_HACK", "the kernel's process replied to its calls with something else")
        calls = [self._read(case, result, *setup) for result, setup in zip(results, prepared, strict=False)]
        if len(calls) < len(requests):
            raise KernelFault("REWARD_HACK", "the kernel's process answered fewer calls than it was given")
        cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
        return Block(calls=calls, cpu_ns=cpu, wall_ns=wall)

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


def block_size(link: ServedLink, case: Mapping[str, Any], iterations: int) -> int:
    """Calls per request while timing: a fifth of the timed iterations, within the exchange's slots."""
    return max(min(-(-iterations // 5), link.slots(case) - 1), 1)


def calibrate(link: ServedLink, case: Mapping[str, Any], size: int) -> dict[str, float]:
    """The harness's own cost of one request of `size` empty calls of this case, CPU and wall, as medians."""
    inputs = {
        name: spec["value"]
        if spec["source"] == "scalar"
        else torch.zeros(spec["shape"] or [], dtype=DTYPES[spec["dtype"]])
        for name, spec in case["inputs"].items()
    }
    blocks = [link.block(case, [inputs] * size, empty=True) for _ in range(CALIBRATION_REQUESTS)][1:]
    cpu = [block.cpu_ns for block in blocks if block.cpu_ns is not None]
    return {
        "cpu_ns": statistics.median(cpu) if cpu else 0.0,
        "wall_ns": statistics.median(block.wall_ns for block in blocks),
        "calls": size,
    }


@dataclass(frozen=True)
class Pair:
    """One request to each side on the same inputs: the judge's figures per call, net of the empty cost."""

    kernel_ns: float
    reference_ns: float
    # What the kernel's process said its calls took, added up, and what the judge measured of them.
    reported_ns: float
    measured_ns: float
    calls: int

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
        overheads: Mapping[str, Mapping[str, float]],
    ) -> None:
        self.job = job
        self.case = case
        self.device = job["device"]
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

    def run(self) -> dict[str, Any]:
        try:
            # The case's own seed goes into a round drawn at random, so that a kernel cannot tell the
            # reproducible round from the others (and answer wrong only where nobody can check it again).
            own_round = -1 if self.job.get("fresh_inputs") else _secret.randrange(self.rounds)
            for round_index in range(self.rounds):
                own = round_index == own_round
                seed = self.case["seed"] if own else _secret.getrandbits(63)
                where = f"round {round_index + 1} of {self.rounds}"
                where += f" (the case's own seed, {seed}): " if own else " (fresh inputs): "
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
        """Warm-up pairs, then timed pairs until the speedup settles or the case's budget ends."""
        size = int(self.overheads["kernel"]["calls"])
        for count in _blocks(self.job["warmup"], -(-self.job["warmup"] // size)) if self.job["warmup"] else []:
            self._pair(count, "a warm-up call", check_share=0.0)
        minimum = max(-(-self.job["iterations"] // size), MIN_PAIRS)
        precision = self.job.get("precision")
        budget = float(self.job.get("case_budget") or 0)
        started = time.monotonic()
        pairs: list[Pair] = []
        while True:
            pairs.append(self._pair(size, "timed call", check_share=CHECKED_SHARE, first=len(pairs) * size))
            if len(pairs) < minimum:
                continue
            ratios = [pair.ratio for pair in pairs]
            if settled(ratios, precision) or time.monotonic() - started > budget or len(pairs) >= MAX_PAIRS:
                break
        self._check_reported(pairs)
        result = self._result("PASSED", None)
        result["samples"] = [pair.kernel_ns for pair in pairs]
        result["reference_samples"] = [pair.reference_ns for pair in pairs]
        result["pair_ratios"] = [pair.ratio for pair in pairs]
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
        kernel_ns = self._net(kernel, self.kernel, "kernel")
        return Pair(
            kernel_ns=kernel_ns / count,
            reference_ns=self._net(reference, self.reference, "reference") / count,
            reported_ns=kernel.reported_ns,
            measured_ns=kernel_ns,
            calls=count,
        )

    def _net(self, block: Block, link: ServedLink, side: str) -> float:
        """The judge's figure of a request: its measure less the calibrated cost of an empty one, never below a
        small share of that cost."""
        empty = self.overheads[side]
        measured, own = (
            (float(block.cpu_ns or 0), empty["cpu_ns"]) if link.measure == "cpu" else (block.wall_ns, empty["wall_ns"])
        )
        if self.device.startswith("cuda") and side == "kernel" and measured < FLUSH_SHARE * own:
            raise _CaseFailed(
                "REWARD_HACK",
                f"a request of the kernel's took {_us(measured)}, less than an empty request with its L2 flushes "
                f"({_us(own)}): the kernel's process skipped work every call does",
            )
        return max(measured - own, NET_FLOOR_SHARE * own, 1.0)

    def _kernel_block(self, input_sets: list[dict[str, Any]], what: str, check_share: float, first: int) -> Block:
        """A request of calls on fresh inputs; after it, each call's outputs checked with probability `check_share`."""
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

    def _reference_block(self, input_sets: list[dict[str, Any]]) -> Block:
        """The same calls, served by the reference's process and measured as the kernel's are."""
        try:
            return self.reference.block(self.case, input_sets)
        except KernelFault as fault:
            raise _CaseFailed("INVALID_REFERENCE", f"timing the reference: {fault.reason}") from None

    def _check_reported(self, pairs: Sequence[Pair]) -> None:
        """The kernel's own times decide nothing, but they must agree with the judge's: added up over the case,
        less than half of what the judge measured (CPU time, on as many CPUs as the quota allows) is a lie."""
        if self.kernel.measure != "cpu":
            return
        cpus = max(int(self.job.get("cpus") or 1), 1)
        reported = cpus * sum(pair.reported_ns for pair in pairs)
        measured = sum(pair.measured_ns for pair in pairs)
        calls = sum(pair.calls for pair in pairs)
        # The noise of the measure itself: half an empty request's cost per request.
        margin = 0.5 * self.overheads["kernel"]["cpu_ns"] * len(pairs)
        if reported < REPORTED_SHARE * (measured - margin):
            raise _CaseFailed(
                "REWARD_HACK",
                f"the kernel's process reported {_us(reported / cpus / calls)} per timed call, but its processes "
                f"used {_us(measured / calls)} of CPU per call: a time it did not spend",
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


def _blocks(total: int, count: int) -> list[int]:
    base, extra = divmod(total, count)
    return [base + (1 if index < extra else 0) for index in range(count)]


def _synchronize(device: str) -> None:
    # CUDA reports a kernel's failure at the next synchronisation: make it this call's.
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def _us(nanoseconds: float) -> str:
    return f"{nanoseconds / 1000:.1f} µs"
