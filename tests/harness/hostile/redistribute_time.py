"""Redistributing time within a request: each reply keeps its calls' total, but says eight calls of ten
took a third of their share and the other two the rest. A judge that checked only a request's total and
took the median over the kernel's per-call split would see a kernel three times faster; this judge takes
no figure from the split at all."""

import hostile_reach
import torch


def _redistributed(original):
    def send(self, message, *args, **kwargs):
        results = message.get("results") if isinstance(message, dict) else None
        timed = [r for r in results or [] if isinstance(r, dict) and isinstance(r.get("ns"), (int, float))]
        if len(timed) >= 3:
            total = sum(r["ns"] for r in timed)
            fast = len(timed) - 2
            share = total / len(timed) / 3
            for index, result in enumerate(timed):
                result["ns"] = share if index < fast else (total - share * fast) / 2
        return original(self, message, *args, **kwargs)

    return send


patched = hostile_reach.patch_named(("send",), _redistributed)


def run(hidden_states, weight, eps, output):
    if not patched:
        raise RuntimeError("attack failed: found no reply writer to patch")
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    torch.mul(hidden_states, torch.rsqrt(variance + eps), out=output)
    output.mul_(weight)
