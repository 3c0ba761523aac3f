"""Making the host look busy, so that the evidence rule allows the wide spread between evaluations of a busy
host (records.rerun RUN_TO_RUN) and a claim half again too fast stays undecided: from the first call, two
threads and a child process spin without end, and a thread writes and syncs files. All of it is in the
kernel's own group, frozen with it and subtracted from what the judge counts as other work (harness.judge.host);
the kernel computes honestly otherwise."""

import os
import threading

import torch

_started = []


def _spin():
    value = 0
    while True:
        value = (value * 31 + 7) % 1000003


def _write():
    number = 0
    while True:
        number += 1
        try:
            with open(f"busy-{number % 8}", "wb") as handle:
                handle.write(os.urandom(1 << 20))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError:
            return


def _start():
    for target in (_spin, _spin, _write):
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        _started.append(thread)
    try:
        if os.fork() == 0:
            _spin()
    except OSError:
        pass


def run(hidden_states, weight, eps, output):
    if not _started:
        _start()
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    torch.mul(hidden_states, torch.rsqrt(variance + eps), out=output)
    output.mul_(weight)
