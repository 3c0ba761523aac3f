"""The kernel's process: `python -m harness.kernel CONFIG SCRATCH CALLS_FD REPLIES_FD EXCHANGE_FD`.

It serves one solution: the kernel under test, or the definition's reference
(which the judge times the same way, in a process of its own). It runs in a
sandbox of its own and knows nothing of the evaluation but its solution: no
seeds, no tolerance, no channel to the parent. It answers the judge's
requests, each a block of calls run back to back (so the harness's own cost
per call is a loop step, not a round trip): for each, take the inputs from the
exchange, call the solution (or, to calibrate, an empty function), leave the
outputs in the exchange; then reply. Between requests its cgroup is frozen.

Nothing here is trusted. A solution can patch this module, the clock, or
write replies itself; the judge checks the outputs it finds in the exchange
and measures every request itself (the group's CPU time, its own wall clock).
The times reported here are detail; the checks below (a tensor subclass, a
replaced clock) only name the cheat sooner.
"""

from __future__ import annotations

import json
import mmap
import os
import resource
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.kernel.gpu_timing import CuptiTimer
from harness.wire.exchange import DTYPE_BYTES, MAX_REQUEST_BYTES, ChannelError, LineChannel, map_exchange
from harness.wire.failures import failure_status, failure_text
from harness.wire.outputs import outputs_as_list
from harness.wire.privileges import drop_privileges

# Address space beyond the memory limit for what the runtime maps without using (thread stacks, arenas).
_ADDRESS_SPACE_SLACK_MB = 2048


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    scratch, calls_fd, replies_fd, exchange_fd = Path(argv[1]), int(argv[2]), int(argv[3]), int(argv[4])
    if config["drop_privileges"]:
        drop_privileges()
    os.dup2(2, 1)
    os.chdir(scratch)
    channel = LineChannel(calls_fd, replies_fd, limit=MAX_REQUEST_BYTES)
    exchange = map_exchange(exchange_fd)
    try:
        serve(config, scratch, channel, exchange)
    except ChannelError as error:
        print(f"kernel: the judge's channel failed: {error}", file=sys.stderr)
        return 1
    return 0


def serve(config: Mapping[str, Any], scratch: Path, channel: LineChannel, exchange: mmap.mmap) -> None:
    # torch warns at import when numpy is absent, which the harness does not need: keep the log for the solution.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch

    device = config["device"]
    if not device.startswith("cuda") and config.get("memory_mb"):
        limit_address_space(config["memory_mb"])
    caller = Caller(torch, device, exchange, bool(config["dps"]))
    solution: Callable[..., Any] | None = None
    while True:
        request = channel.receive()
        operation = request.get("op")
        if operation == "exit":
            return
        if operation == "load":
            solution, error = _load(config, device, scratch)
            channel.send({"seq": request.get("seq"), "error": error, "timer": caller.timer_name})
        elif operation == "probe":
            channel.send({"seq": request.get("seq"), "ns": caller.probe()})
        elif operation == "calls":
            function = caller.empty if request.get("empty") or solution is None else solution
            results = []
            for call in request["calls"]:
                results.append(caller.call(function, call))
                if "error" in results[-1]:
                    break
            caller.gpu_spans(results)
            channel.send({"seq": request.get("seq"), "results": results})


def _load(config: Mapping[str, Any], device: str, scratch: Path) -> tuple[Callable[..., Any] | None, Any]:
    from harness.kernel.loading import LoadError, load_solution

    try:
        return load_solution({"solution": config}, device, scratch / "build"), None
    except LoadError as error:
        return None, [error.status, error.reason]
    except BaseException as error:
        return None, ["COMPILE_ERROR", "the solution did not load: " + failure_text(error)]


class Caller:
    """One call at a time: views of the exchange in, the solution timed, the outputs back into the exchange."""

    def __init__(self, torch: Any, device: str, exchange: mmap.mmap, dps: bool) -> None:
        self.torch = torch
        self.device = device
        self.exchange = exchange
        self.dps = dps
        self.cuda = device.startswith("cuda")
        self.clock = time.perf_counter_ns
        self.flush = None
        # The previous call's device tensors stay alive until this call has its own, so addresses change.
        self.previous: list[Any] = []
        self.cupti: CuptiTimer | None = None
        self.probe_buffer: Any = None
        # Views of the exchange by (offset, dtype, shape), each with the layout it was made with (`_handed`).
        self.views: dict[tuple[Any, ...], tuple[Any, int, Any, tuple[int, ...]]] = {}
        # Where the exchange lies in memory: only a tensor there can be one of the call's arguments.
        start = torch.frombuffer(exchange, dtype=torch.uint8).data_ptr() if len(exchange) else 0
        self.exchange_span = range(start, start + len(exchange))
        if self.cuda:
            from harness.kernel.l2_flush import l2_flush_buffer

            self.flush = l2_flush_buffer(torch.device(device))
            self.cupti = CuptiTimer.start()
        self.timer_name = "cupti" if self.cupti else "cuda_event" if self.cuda else "perf_counter_ns"

    def probe(self) -> float:
        """A small fixed piece of GPU work, timed with events: slow when something else holds the GPU."""
        if not self.cuda:
            return 0.0
        torch = self.torch
        if self.probe_buffer is None:
            self.probe_buffer = torch.zeros(2**20, device=self.device)
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        self.probe_buffer.add_(1.0)
        end.record()
        torch.cuda.synchronize(self.device)
        return float(begin.elapsed_time(end) * 1e6)

    def empty(self, *arguments: Any) -> Any:
        """Calibration: what a call costs the harness, without a solution. A returned output is the exchange's
        own (on the CPU), so no copy is counted: writing its outputs where the judge reads them is a call's own
        work, as a destination-passing solution's writes are."""
        if self.dps:
            return None
        return list(self._declared)

    def call(self, function: Callable[..., Any], request: Mapping[str, Any]) -> dict[str, Any]:
        try:
            arguments = [self._argument(item) for item in request["args"]]
            view = self._handed if self.dps else self._view
            outputs = [view(*placement[:3]) for placement in request["outs"]]
        except (KeyError, TypeError, ValueError) as error:
            return {"error": ["RUNTIME_ERROR", f"the call could not be set up: {error}"]}
        device_outputs = [o.to(self.device) for o in outputs] if self.cuda else outputs
        self._declared = device_outputs
        call_arguments = [*arguments, *device_outputs] if self.dps else arguments
        try:
            returned, elapsed = self._timed(function, call_arguments)
        except Exception as error:
            return {"error": [failure_status(error), failure_text(error)]}
        if self.clock is not time.perf_counter_ns:
            return {"error": ["REWARD_HACK", "the solution replaced the harness's clock: time.perf_counter_ns"]}
        if self.cuda:
            self.previous = [*arguments, *device_outputs]
        if self.dps:
            if self.cuda:
                for host, device_tensor in zip(outputs, device_outputs, strict=True):
                    host.copy_(device_tensor)
            return {"ns": elapsed}
        return self._returned(returned, request["outs"], elapsed, arguments)

    def _timed(self, function: Callable[..., Any], arguments: Sequence[Any]) -> tuple[Any, float]:
        torch = self.torch
        if not self.cuda:
            start = self.clock()
            returned = function(*arguments)
            return returned, float(self.clock() - start)
        assert self.flush is not None
        self.flush.zero_()
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        if self.cupti:
            self.cupti.begin()
        begin.record()
        try:
            returned = function(*arguments)
        finally:
            end.record()
            if self.cupti:
                self.cupti.end()
        torch.cuda.synchronize(self.device)
        # elapsed_time is in milliseconds.
        return returned, float(begin.elapsed_time(end) * 1e6)

    def gpu_spans(self, results: list[dict[str, Any]]) -> None:
        """With CUPTI, each timed call's time becomes the span of every GPU activity it launched, any stream."""
        if not self.cupti:
            return
        timed = [result for result in results if "ns" in result or "error" in result]
        for result, span in zip(timed, self.cupti.spans(), strict=False):
            if span is not None and "ns" in result:
                result["ns"] = span

    def _returned(
        self, returned: Any, placements: Sequence[Any], elapsed: float, arguments: Sequence[Any]
    ) -> dict[str, Any]:
        started = self.clock()
        written = self._written_as_declared(returned, placements) or self._written(returned, placements, arguments)
        if isinstance(written, dict):
            return written
        described, count = written
        if not self.cuda:
            # The judge's figure counts writing the returned outputs where it reads them as the call's own work
            # (see `empty`), so the reported time does too: a call that returns a large buffer it was given (a
            # cache updated in place, returned whole) would otherwise report a small part of what its request
            # cost, and the check of the reported split would call that a lie.
            elapsed += float(self.clock() - started)
        return {"ns": elapsed, "returned": described, "count": count}

    def _written_as_declared(self, returned: Any, placements: Sequence[Any]) -> tuple[list[Any], int] | None:
        """The usual call, one new tensor of the declared shape and dtype returned, written where the judge reads
        it with as little bookkeeping as a call can have (see `_view`); None for anything else."""
        if len(placements) != 1 or type(returned) is not self.torch.Tensor or returned.requires_grad:
            return None
        offset, shape, dtype, _ = placements[0]
        target = self._view(offset, shape, dtype)
        if returned.dtype is not target.dtype or returned.shape != target.shape:
            return None
        pointer = returned.data_ptr()
        if pointer != target.data_ptr():
            if pointer in self.exchange_span:
                return None  # perhaps an argument returned whole (`_argument_returned`)
            target.copy_(returned)
        return [{"shape": shape, "dtype": dtype}], 1

    def _written(
        self, returned: Any, placements: Sequence[Any], arguments: Sequence[Any]
    ) -> tuple[list[Any], int] | dict[str, Any]:
        """Whatever a call returned, described and written where the judge reads it; or the call's error."""
        values = outputs_as_list(returned, [str(index) for index in range(len(placements))])
        described = []
        for value, placement in zip(values, placements, strict=False):
            if isinstance(value, (bool, int, float)) and not placement[1]:
                # A scalar output returned as a number: the exchange holds it as the declared dtype.
                self._view(*placement[:3]).fill_(value)
                described.append({"shape": [], "dtype": placement[2]})
                continue
            if not isinstance(value, self.torch.Tensor):
                described.append({"kind": type(value).__name__})
                continue
            if type(value) is not self.torch.Tensor:
                # A subclass can answer comparisons as it likes; whatever its name, it is not a plain tensor.
                name = type(value).__qualname__
                return {"error": ["REWARD_HACK", f"the solution returned {name}, not plain tensors"]}
            dtype = str(value.dtype).removeprefix("torch.")
            described.append({"shape": list(value.shape), "dtype": dtype})
            if (source := self._argument_returned(value, arguments)) is not None:
                described[-1]["input"] = source
                continue
            if value.nbytes <= placement[3] and dtype in DTYPE_BYTES:
                target = self._view(placement[0], described[-1]["shape"], dtype)
                if target.data_ptr() != value.data_ptr():
                    target.copy_(value.detach() if value.requires_grad else value)
        return described, len(values)

    def _argument_returned(self, value: Any, arguments: Sequence[Any]) -> int | None:
        """The position of the argument `value` is, whole, where it is one (on the CPU: a buffer updated in place
        and returned, such as a KV cache). The judge reads that output where the argument lies, so a call's cost
        is not mostly copying a buffer it was given (a 1 GiB cache, for an update of a few rows)."""
        if self.cuda or not value.is_contiguous():
            return None
        for index, argument in enumerate(arguments):
            if (
                isinstance(argument, self.torch.Tensor)
                and argument.data_ptr() == value.data_ptr()
                and argument.shape == value.shape
                and argument.dtype == value.dtype
            ):
                return index
        return None

    def _argument(self, item: Mapping[str, Any]) -> Any:
        if "value" in item:
            return item["value"]
        view = self._handed(item["offset"], item["shape"], item["dtype"])
        return view.to(self.device) if self.cuda else view

    def _handed(self, offset: int, shape: list[int], dtype: str) -> Any:
        """A view of the exchange for the solution: the one it was given before, while that still has the layout
        it was made with. What a solution did to its argument in place (its shape, its strides, its storage,
        gradients) stays with that call: a view it changed is made anew."""
        kept = self.views.get((offset, dtype, *shape))
        if kept is not None:
            view, pointer, size, stride = kept
            if view.data_ptr() == pointer and view.shape == size and view.stride() == stride and not view.requires_grad:
                return view
        return self._made(offset, shape, dtype)

    def _view(self, offset: int, shape: list[int], dtype: str) -> Any:
        """A view of the exchange for the harness's own use (where it writes a returned output), never handed to
        the solution: made once.

        Views are kept because making one costs more than most of a call's bookkeeping: a kernel serving its
        requests through a loop of its own keeps its views, and whatever this loop spends beyond such a loop, the
        kernel would gain over the reference, which this loop serves (issue 43)."""
        kept = self.views.get((offset, dtype, *shape))
        return kept[0] if kept is not None else self._made(offset, shape, dtype)

    def _made(self, offset: int, shape: list[int], dtype: str) -> Any:
        torch = self.torch
        torch_dtype = getattr(torch, dtype)
        count = 1
        for extent in shape:
            count *= extent
        if count == 0:
            view = torch.empty(shape, dtype=torch_dtype)
        else:
            view = torch.frombuffer(self.exchange, dtype=torch_dtype, count=count, offset=offset).view(shape)
        self.views[(offset, dtype, *shape)] = (view, view.data_ptr(), view.shape, view.stride())
        return view


def limit_address_space(memory_mb: int) -> None:
    """Make an allocation far past the limit fail at once (the cgroup or the watchdog catches gradual growth)."""
    mapped_kb = 0
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmSize:"):
                mapped_kb = int(line.split()[1])
    limit = mapped_kb * 1024 + (memory_mb + _ADDRESS_SPACE_SLACK_MB) * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
