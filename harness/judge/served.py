"""The judge's link to a process it serves requests to: the kernel's, or the definition's reference's.

Each served process (harness.kernel) runs in a sandbox and a cgroup of its
own and is reached only through a `ServedLink`: the judge writes a request's
inputs into that process's exchange and resets its outputs, thaws the group,
sends the request down a pipe, waits for the reply, freezes the group again,
and reads what the calls left in the exchange, copying it out at once.

Every figure the link returns is the judge's own measure of the whole request
(`Block`): the group's CPU time, read while it is frozen before and after, and
the judge's wall clock around it. What the served process says of its own
calls (`Call.reported_ns`) is detail. Between requests the group stays frozen,
so nothing of the kernel's runs while the judge stages inputs, checks outputs
or times the reference.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from harness.jail.cgroups import FreezeError, Freezer, read_cpu_ns
from harness.judge.tensors import DTYPES, changed_inputs
from harness.wire.exchange import MAX_SLOTS, ChannelError, LineChannel, Placement, placements, slot_bytes

# Calibration requests per case and side, before anything is loaded (the first, a cold start, is dropped).
CALIBRATION_REQUESTS = 11
# What the judge writes into the exchange for each empty call of a calibration request, at most (`_stage`).
STAGED_BYTES = 64 * 2**20


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
    # Every input the call wrote into, by name, with where (the judge decides which of them a call may write).
    changed_inputs: dict[str, str] = field(default_factory=dict)


@dataclass
class Block:
    """Calls run back to back in one request, with the judge's own measures of the whole request."""

    calls: list[Call]
    # The served group's CPU time over the request (read frozen, before and after), where it has a group.
    cpu_ns: int | None
    wall_ns: int
    # From the thaw to the end of the freeze: as long as the group could run, longer than the request.
    thawed_ns: int
    # How long the served process's serving thread waited on a run queue over the request (read frozen, before and
    # after), and the judge's own thread while it waited for the reply (own_waited_ns), where the judge holds the
    # serving thread's scheduler statistics; None where it does not.
    waited_ns: int | None = None

    @property
    def latency_ns(self) -> int | None:
        """The request's latency as the host left it to the served process: the judge's wall clock less the time
        its serving thread waited for a CPU (the host's other work, or the group's own other threads, whose CPU
        time the group's counter holds). Running, sleeping and blocking all count. None without the wait."""
        if self.waited_ns is None:
            return None
        return self.wall_ns - min(max(self.waited_ns, 0), self.wall_ns)

    @property
    def reported_ns(self) -> float:
        return sum(call.reported_ns for call in self.calls)


def own_waited_ns() -> int:
    """How long the judge's own thread has waited on a run queue (its schedstat), 0 where it cannot tell.

    On a busy host the judge waits for a CPU before it reads a reply, and that wait lies in its wall clock around
    the request though the served process was done: it is the host's, not the kernel's, and taken off with the
    serving thread's own wait (Block.waited_ns). The two do not overlap: the judge is blocked on the reply while
    the served thread runs or waits. A kernel can lengthen it only by keeping the CPUs busy, whose CPU time is its
    group's, and a request's figure is never below that (case.py)."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as schedstat:
            return int(schedstat.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0


@dataclass
class ServedLink:
    """The judge's side of one served process (the kernel's or the reference's): its exchange, its pipes, and
    its cgroup's CPU meter and freezer where it has a group."""

    channel: LineChannel
    exchange: mmap.mmap
    cpu_meter: int | None
    dps: bool
    freezer: Freezer | None = None
    # The serving thread's /proc schedstat, opened by the parent (harness.jail.sandbox `serving_thread_schedstat`).
    run_delay: int | None = None
    sequence: int = 0
    slot: int = 0
    timer: str = ""

    @classmethod
    def of(cls, descriptors: Mapping[str, Any], dps: bool) -> ServedLink:
        from harness.wire.exchange import map_exchange

        freezer = Freezer(descriptors["freeze"], descriptors["frozen"]) if "freeze" in descriptors else None
        link = cls(
            LineChannel(descriptors["replies"], descriptors["calls"]),
            map_exchange(descriptors["exchange"]),
            descriptors.get("cpu_meter"),
            dps,
            freezer,
            descriptors.get("run_delay"),
        )
        link.freeze()
        return link

    @property
    def metered(self) -> bool:
        """Whether the judge can measure this process's CPU time, frozen between requests (it has a cgroup)."""
        return self.cpu_meter is not None and self.freezer is not None

    def freeze(self) -> None:
        if self.freezer is None:
            return
        try:
            self.freezer.freeze()
        except (FreezeError, OSError) as error:
            # A host under memory pressure can hold a task in the kernel past the limit: the judge cannot measure,
            # which says nothing against the kernel (an evaluation fault, tried again), never a conviction.
            raise KernelFault("HARNESS_ERROR", f"the process could not be frozen between requests: {error}") from None

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

    def probe(self) -> float:
        """On CUDA, the served process's time for a small fixed piece of GPU work (harness.kernel.process `probe`): how
        busy the GPU is with anything else. Only the reference's process is asked; its answer is trusted."""
        self.thaw()
        try:
            reply = self._request({"op": "probe"})
        finally:
            self.freeze()
        probe = reply.get("ns")
        return float(probe) if isinstance(probe, (int, float)) and not isinstance(probe, bool) else float("inf")

    def exit(self) -> None:
        with contextlib.suppress(ChannelError, OSError):
            self.thaw()
            self.channel.send({"op": "exit"})

    def cpu_ns(self) -> int | None:
        return None if self.cpu_meter is None else read_cpu_ns(self.cpu_meter)

    def waited_ns(self) -> int | None:
        """The serving thread's run-queue wait so far (schedstat's second field), or None where it cannot be read:
        a thread that ended (the kernel can end its own main thread) has none, and then nothing is taken off."""
        if self.run_delay is None:
            return None
        try:
            return int(os.pread(self.run_delay, 256, 0).split()[1])
        except (OSError, ValueError, IndexError):
            return None

    def slots(self, case: Mapping[str, Any]) -> int:
        return max(len(self.exchange) // slot_bytes(case), 1)

    def block(
        self,
        case: Mapping[str, Any],
        input_sets: Sequence[Mapping[str, Any]],
        *,
        empty: bool = False,
        staged: bool = False,
        slot: int | None = None,
        meanwhile: Callable[[], None] | None = None,
        figures_only: bool = False,
    ) -> Block:
        """Write each call's inputs into the next slots (or into `slot`, for a single call), reset their outputs,
        run them, and read back what was left.

        `meanwhile` is the judge's own work, done while the calls run: the request's wall time then measures
        nothing, so only requests whose figures are not used (correctness rounds) take it. What it raises is
        raised once the reply is in and the group frozen again, before the calls' results are read.

        `figures_only`: the calls' outputs are not wanted (the reference's timed requests): each reply is checked
        for an error, and nothing is copied out of the exchange or compared with the inputs.

        `staged` (empty calls, to calibrate): the judge writes each call's inputs and resets its outputs as for
        a timed request (zeros: an empty call reads nothing), so the request runs as cold as a timed one."""
        if len(input_sets) >= self.slots(case) or (slot is not None and len(input_sets) != 1):
            raise ValueError("a block of more calls than the exchange has slots for, less one")
        requests, prepared = [], []
        for inputs in input_sets:
            self.slot = (self.slot + 1) % self.slots(case) if slot is None else slot % self.slots(case)
            # An empty call reads no input and leaves its outputs alone: nothing of them is written or read back.
            request, originals, places = self._place(case, inputs, self.slot, write=not empty)
            if empty and staged:
                self._stage(places)
            requests.append(request)
            prepared.append((inputs, originals, places))
        # Read frozen, so the counter is settled: the group runs only between the thaw and the freeze.
        cpu_before = self.cpu_ns()
        waited_before = self.waited_ns()
        thawed_before = time.perf_counter_ns()
        self.thaw()
        own_waited_before = own_waited_ns()
        wall_before = time.perf_counter_ns()
        failed: list[Exception] = []
        try:
            reply = self._request({"op": "calls", "calls": requests, "empty": empty}, _guarded(meanwhile, failed))
        except KernelFault:
            # The judge's own failure came first; a request after it finds the process gone.
            if failed:
                raise failed[0] from None
            raise
        wall = time.perf_counter_ns() - wall_before
        own_waited = own_waited_ns() - own_waited_before
        self.freeze()
        thawed = time.perf_counter_ns() - thawed_before
        cpu_after = self.cpu_ns()
        waited_after = self.waited_ns()
        if failed:
            raise failed[0]
        results = reply.get("results")
        if not isinstance(results, list) or not 0 < len(results) <= len(requests):
            raise KernelFault("REWARD_HACK", "the kernel's process replied to its calls with something else")
        if len(results) < len(requests):
            raise KernelFault("REWARD_HACK", "the kernel's process answered fewer calls than it was given")
        if figures_only:
            for result in results:
                _reported_ns(result)
        read = [] if empty or figures_only else zip(results, prepared, strict=True)
        calls = [self._read(case, result, *setup) for result, setup in read]
        cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
        # A wait the judge could not read where it holds the thread's statistics is no wait: nothing is taken off.
        waited: int | None = None
        if self.run_delay is not None:
            waited = waited_after - waited_before if waited_before is not None and waited_after is not None else 0
            waited += max(own_waited, 0)
        return Block(calls=calls, cpu_ns=cpu, wall_ns=wall, thawed_ns=thawed, waited_ns=waited)

    def _place(
        self, case: Mapping[str, Any], inputs: Mapping[str, Any], slot: int, *, write: bool = True
    ) -> tuple[dict[str, Any], dict[str, torch.Tensor], tuple[dict[str, Placement], list[Placement]]]:
        tensor_names = [name for name, value in inputs.items() if isinstance(value, torch.Tensor)]
        input_places, output_places = placements(case, slot, tensor_names)
        places = dict(zip(tensor_names, input_places, strict=True))
        originals = {}
        for name, place in places.items() if write else ():
            originals[name] = inputs[name].detach().to("cpu")
            self._view(place).copy_(originals[name].reshape(place.shape))
        for place in output_places if write else ():
            _reset(self._view(place))
        arguments = [
            {"offset": places[name].offset, "shape": places[name].shape, "dtype": places[name].dtype}
            if name in places
            else {"value": value}
            for name, value in inputs.items()
        ]
        request = {"args": arguments, "outs": [[p.offset, p.shape, p.dtype, p.nbytes] for p in output_places]}
        return request, originals, (places, output_places)

    def _stage(self, places: tuple[dict[str, Placement], list[Placement]]) -> None:
        """What staging a timed request writes, for an empty call: its inputs' bytes (zeros) and its outputs reset,
        up to STAGED_BYTES a call: past any CPU's caches, more makes the request no colder, only the judge slower
        (a case of 640 MiB of output a call took twice as long to judge)."""
        inputs, outputs = places
        left = STAGED_BYTES
        for place, fill in [*((place, 0) for place in inputs.values()), *((place, 0xFF) for place in outputs)]:
            count = min(place.nbytes, left)
            if count > 0:
                torch.frombuffer(self.exchange, dtype=torch.uint8, count=count, offset=place.offset).fill_(fill)
            left -= count

    def _read(
        self,
        case: Mapping[str, Any],
        result: Any,
        inputs: Mapping[str, Any],
        originals: Mapping[str, torch.Tensor],
        places: tuple[dict[str, Placement], list[Placement]],
    ) -> Call:
        input_places, output_places = places
        sources = output_places if self.dps else _output_sources(result, list(inputs), input_places, output_places)
        # Copied out at once: what the kernel writes into the exchange later changes nothing.
        found = [self._view(place).clone() for place in sources]
        views = {name: self._view(place) for name, place in input_places.items()}
        reported = _reported_ns(result)
        call = Call(
            inputs=dict(inputs),
            reported_ns=reported,
            outputs=found,
            changed_inputs=changed_inputs(originals, views),
        )
        if not self.dps:
            call.mismatch = _returned_mismatch(result, case, output_places)
        return call

    def _request(self, message: dict[str, Any], meanwhile: Callable[[], None] | None = None) -> dict[str, Any]:
        """The reply to `message`; `meanwhile` is run between sending it and waiting for the reply."""
        self.sequence += 1
        try:
            self.channel.send({"seq": self.sequence, **message})
            if meanwhile is not None:
                meanwhile()
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


def _reported_ns(result: Any) -> float:
    """The time a call's reply reports; a reply that is no call's, or the call's error, as a fault."""
    if not isinstance(result, dict):
        raise KernelFault("REWARD_HACK", "the kernel's process replied to a call with something else")
    if result.get("error") is not None:
        raise _fault_from(result["error"])
    reported = result.get("ns")
    if not isinstance(reported, (int, float)) or isinstance(reported, bool) or not 0 <= reported < 1e15:
        raise KernelFault("REWARD_HACK", f"the kernel's process reported a time that is not one: {str(reported)[:80]}")
    return float(reported)


def _guarded(work: Callable[[], None] | None, failed: list[Exception]) -> Callable[[], None] | None:
    """`work`, keeping what it raises in `failed` instead of raising it while a request is in flight."""
    if work is None:
        return None

    def run() -> None:
        try:
            work()
        except Exception as error:
            failed.append(error)

    return run


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


def _output_sources(
    reply: Any, names: Sequence[str], input_places: Mapping[str, Placement], output_places: Sequence[Placement]
) -> list[Placement]:
    """Where each output lies: its own placement, or, where the call returned an argument whole (a buffer updated
    in place: harness.kernel.process `_argument_returned`), that argument's, if its shape and dtype are the output's.
    What is read there is checked as any output is; a wrong claim leaves an output unwritten."""
    sources = list(output_places)
    described = reply.get("returned") if isinstance(reply, Mapping) else None
    items = described if isinstance(described, list) else []
    for index, (item, place) in enumerate(zip(items, output_places, strict=False)):
        position = item.get("input") if isinstance(item, dict) else None
        if type(position) is not int or not 0 <= position < len(names):
            continue
        argument = input_places.get(names[position])
        if argument is not None and argument.shape == place.shape and argument.dtype == place.dtype:
            sources[index] = argument
    return sources


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


def block_size(link: ServedLink, case: Mapping[str, Any]) -> int:
    """The most calls a request may hold: as many as the exchange has slots for, less one (calls at the same
    addresses as the request before would find what it left), and never more than a request of the largest case
    holds (a small case finds many more slots in an exchange sized for the largest)."""
    return max(min(link.slots(case), MAX_SLOTS) - 1, 1)


@dataclass(frozen=True)
class EmptyCost:
    """The harness's own cost of a request of empty calls: a fixed part (thaw, the round trip, freeze) and a
    part per call, from the medians of requests of one call and of `calls` calls."""

    calls: int
    cpu: tuple[float, float]
    wall: tuple[float, float]
    # The wall clock less the serving thread's run-queue wait (`Block.latency_ns`), where the judge reads it.
    latency: tuple[float, float] | None = None
    # On CUDA, the reference's process's probe on an idle GPU (harness.judge.case `_wait_for_idle_gpu`).
    probe_ns: float = 0.0

    def cpu_ns(self, calls: int) -> float:
        return max(self.cpu[0] + self.cpu[1] * calls, 0.0)

    def wall_ns(self, calls: int) -> float:
        return max(self.wall[0] + self.wall[1] * calls, 0.0)

    def latency_ns(self, calls: int) -> float:
        latency = self.latency or self.wall
        return max(latency[0] + latency[1] * calls, 0.0)


def calibrate(
    kernel: ServedLink, reference: ServedLink, case: Mapping[str, Any], size: int, *, probe: bool = False
) -> dict[str, EmptyCost]:
    """The harness's own cost of requests of up to `size` empty calls of this case, CPU, wall and latency, for
    each side (`kernel`, `reference`); with `probe` (on CUDA), the reference's process's idle GPU probe time too.

    Measured the way timed requests run: in pairs, one request to each side in an order drawn per pair, each
    staged as a timed request is (inputs written, outputs reset), so that each side's request follows the other
    side's and the judge's writes, as cold as a timed one. A calibration made warm (each side's requests back to
    back, nothing written between them) cost less than the same loop cold, and a kernel whose own request loop
    was leaner than the harness's cold one gained the difference on every timed request."""
    # Placeholders: an empty call reads no input. Never filled: torch fills no packed 4-bit float on the CPU.
    inputs = {
        name: spec["value"]
        if spec["source"] == "scalar"
        else torch.empty(spec["shape"] or [], dtype=DTYPES[spec["dtype"]])
        for name, spec in case["inputs"].items()
    }
    links = {"kernel": kernel, "reference": reference}
    medians = {calls: _empty_medians(links, case, [inputs] * calls) for calls in dict.fromkeys((1, size))}
    costs = {}
    for side, link in links.items():
        one, most = medians[1][side], medians[size][side]
        cpu, wall, latency = (_fixed_and_per_call(one[i], most[i], size) for i in (0, 1, 2))
        # Only the reference's process is asked (harness.judge.case `_wait_for_idle_gpu`).
        probed = 0.0
        if probe and side == "reference":
            probed = statistics.median(link.probe() for _ in range(CALIBRATION_REQUESTS))
        waits = link.run_delay is not None
        costs[side] = EmptyCost(calls=size, cpu=cpu, wall=wall, latency=latency if waits else None, probe_ns=probed)
    return costs


def _fixed_and_per_call(one: float, most: float, size: int) -> tuple[float, float]:
    """(fixed part, part per call) of a cost measured for requests of one call and of `size` calls."""
    if size == 1:
        return (0.0, one)
    per_call = (most - one) / (size - 1)
    return (one - per_call, per_call)


def _empty_medians(
    links: Mapping[str, ServedLink], case: Mapping[str, Any], input_sets: Sequence[Mapping[str, Any]]
) -> dict[str, tuple[float, float, float]]:
    """Per side, the (CPU, wall, latency) medians of CALIBRATION_REQUESTS pairs of requests of these empty calls,
    staged, in an order drawn per pair; the first pair (cold from the start) dropped."""
    figures: dict[str, list[tuple[int | None, int, int | None]]] = {side: [] for side in links}
    for _ in range(CALIBRATION_REQUESTS):
        order = list(links)
        _order.shuffle(order)
        for side in order:
            block = links[side].block(case, input_sets, empty=True, staged=True)
            figures[side].append((block.cpu_ns, block.wall_ns, block.latency_ns))
    medians = {}
    for side, measured in figures.items():
        kept = measured[1:]
        cpu = [cpu_ns for cpu_ns, _, _ in kept if cpu_ns is not None]
        latency = [latency_ns for _, _, latency_ns in kept if latency_ns is not None]
        wall = float(statistics.median(wall for _, wall, _ in kept))
        medians[side] = (
            float(statistics.median(cpu)) if cpu else 0.0,
            wall,
            float(statistics.median(latency)) if latency else wall,
        )
    return medians


_order = random.SystemRandom()
