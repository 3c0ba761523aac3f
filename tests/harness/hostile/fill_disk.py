"""Filling the disk: write into the scratch folder until the writes fail, or up to 1 GiB (four times the
tests' --scratch-mb), then compute honestly. A write refused at the limit ends the kernel with that error."""

import os
from pathlib import Path

import torch

CAP_BYTES = 2**30
_CHUNK = b"\xa5" * (16 * 2**20)
_filled = []


def _fill():
    target = Path(os.environ.get("TMPDIR") or os.getcwd()) / "fill"
    with open(target, "wb") as fill:
        written = 0
        while written < CAP_BYTES:
            written += fill.write(_CHUNK)
        fill.flush()
        os.fsync(fill.fileno())
    _filled.append(target)


def run(hidden_states, weight, eps, output):
    if not _filled:
        _fill()
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    torch.mul(hidden_states, torch.rsqrt(variance + eps), out=output)
    output.mul_(weight)
