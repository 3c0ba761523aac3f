"""What passes between the judge and the kernel's process: tensors in shared memory, calls and replies on pipes.

The parent makes one memfd, sealed against shrinking and growing (so neither
side can make the other's mapping fault), sized for several slots of the
largest case: every tensor of a call, inputs then outputs, 64-byte aligned.
The judge writes each call's inputs into a slot, fills its outputs with a
pattern no correct kernel leaves, and sends a block of calls; slots are used
in turn, so a kernel never finds its inputs where the previous call had them.

Calls and replies are JSON lines on a pipe each way. The judge reads a reply
of at most `MAX_REPLY_BYTES`; anything else on the pipe is the kernel's
process misbehaving, and the worst that earns it is a failure of its own.

This module is imported by the parent too, which has no torch: the sizes of
dtypes are spelled out here.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ALIGNMENT = 64
# Slots: at least two (consecutive calls never share addresses), and up to one request of calls plus one, within
# a budget (a request of large tensors runs in fewer calls instead).
MIN_SLOTS, MAX_SLOTS = 2, 33
EXCHANGE_BUDGET = 256 * 2**20
MAX_REPLY_BYTES = 64 * 1024
# What the served process accepts from the judge in one line: a request of MAX_SLOTS - 1 calls, each naming every
# input of a definition with many of them.
MAX_REQUEST_BYTES = 4 * 2**20
# Bytes per element, by the formats' dtype names (a float4_e2m1fn_x2 element is a packed pair).
DTYPE_BYTES = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float4_e2m1fn_x2": 1,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
}


class ChannelError(Exception):
    """The other side broke the protocol: closed its pipe, or wrote what is not a reply."""


@dataclass(frozen=True)
class Placement:
    """Where one tensor of a call lies in the exchange."""

    offset: int
    shape: list[int]
    dtype: str

    @property
    def nbytes(self) -> int:
        return tensor_bytes(self.shape, self.dtype)


def tensor_bytes(shape: Sequence[int] | None, dtype: str) -> int:
    count = 1
    for size in shape or ():
        count *= size
    return count * DTYPE_BYTES[dtype]


def _aligned(size: int) -> int:
    return -(-size // ALIGNMENT) * ALIGNMENT


def slot_bytes(case: Mapping[str, Any]) -> int:
    """The bytes one call of this job case takes: its tensor inputs and its outputs."""
    specs = [spec for spec in case["inputs"].values() if spec["source"] != "scalar"]
    specs += list(case["outputs"].values())
    return sum(_aligned(max(tensor_bytes(spec["shape"], spec["dtype"]), 1)) for spec in specs)


def exchange_bytes(cases: Sequence[Mapping[str, Any]]) -> int:
    largest = max([slot_bytes(case) for case in cases] + [ALIGNMENT])
    return largest * min(max(EXCHANGE_BUDGET // largest, MIN_SLOTS), MAX_SLOTS)


def placements(
    case: Mapping[str, Any], slot: int, tensor_inputs: Sequence[str]
) -> tuple[list[Placement], list[Placement]]:
    """(the tensor inputs' placements, in the order given; the outputs'), in slot `slot` of this case."""
    offset = slot * slot_bytes(case)
    inputs, outputs = [], []
    for name in tensor_inputs:
        spec = case["inputs"][name]
        inputs.append(Placement(offset, list(spec["shape"] or []), spec["dtype"]))
        offset += _aligned(max(inputs[-1].nbytes, 1))
    for spec in case["outputs"].values():
        outputs.append(Placement(offset, list(spec["shape"] or []), spec["dtype"]))
        offset += _aligned(max(outputs[-1].nbytes, 1))
    return inputs, outputs


def map_exchange(descriptor: int) -> mmap.mmap:
    """The exchange, mapped with every page in place: a slot's first use would otherwise pay its page faults
    inside the kernel's timed call."""
    return mmap.mmap(descriptor, 0, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE)


class LineChannel:
    """JSON lines over a pair of descriptors, with a bound on what is read."""

    def __init__(self, read_fd: int, write_fd: int, limit: int = MAX_REPLY_BYTES) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.limit = limit
        self.pending = b""

    def send(self, message: Mapping[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        try:
            while data:
                data = data[os.write(self.write_fd, data) :]
        except OSError as error:
            raise ChannelError(f"the other process closed its channel ({error.strerror})") from None

    def receive(self) -> dict[str, Any]:
        while b"\n" not in self.pending:
            if len(self.pending) > self.limit:
                raise ChannelError(f"a line of more than {self.limit} bytes on the channel")
            chunk = os.read(self.read_fd, 65536)
            if not chunk:
                raise ChannelError("the other process closed its channel")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        if len(line) > self.limit:
            raise ChannelError(f"a line of more than {self.limit} bytes on the channel")
        try:
            message = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ChannelError("a line on the channel that is not JSON") from None
        if not isinstance(message, dict):
            raise ChannelError("a line on the channel that is not a JSON object")
        return message
