"""Memory outside the process's own pages: 2 GiB (twice the tests' limit) written into a memfd, or into
/dev/shm where memfd_create is refused, and held while the kernel computes honestly. Refused both ways,
it raises."""

import os

import torch

HOARD_BYTES = 2 * 2**30
_CHUNK = b"\xa5" * (64 * 2**20)
_held = []


def _hoard():
    try:
        descriptor = os.memfd_create("hoard")
    except OSError:
        descriptor = os.open("/dev/shm/hoard", os.O_RDWR | os.O_CREAT, 0o600)
    written = 0
    while written < HOARD_BYTES:
        written += os.write(descriptor, _CHUNK)
    _held.append(descriptor)


def run(hidden_states, weight, eps, output):
    if not _held:
        _hoard()
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    torch.mul(hidden_states, torch.rsqrt(variance + eps), out=output)
    output.mul_(weight)
