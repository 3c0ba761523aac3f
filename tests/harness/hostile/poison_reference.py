"""Poisoning the reference: the torch functions an RMSNorm reference uses (rsqrt, sqrt, rms_norm) return
zeros, so the reference's answer is zero, and so is the kernel's. If the reference is out of reach, the
kernel's zeros are wrong; either way the kernel must fail, never the reference take the blame."""

import torch


def _zeros(original):
    return lambda *args, **kwargs: torch.zeros_like(original(*args, **kwargs))


for owner, name in (
    (torch, "rsqrt"),
    (torch, "sqrt"),
    (torch, "rms_norm"),
    (torch.Tensor, "rsqrt"),
    (torch.Tensor, "sqrt"),
    (torch.nn.functional, "rms_norm"),
):
    if hasattr(owner, name):
        setattr(owner, name, _zeros(getattr(owner, name)))


def run(hidden_states, weight, eps, output):
    output.zero_()
