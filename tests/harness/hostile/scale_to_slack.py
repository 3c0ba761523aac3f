"""Scaling to the slack: every reported time is 0.6 of the real one, under any check that allows a
quarter or a third of slack. The figure is the judge's, so it gains nothing: it passes no faster than
the honest kernel."""

import hostile_reach
import torch

FACTOR = 0.6


def _scaled(original):
    def send(self, message, *args, **kwargs):
        if isinstance(message, dict) and isinstance(message.get("results"), list):
            for result in message["results"]:
                if isinstance(result, dict) and isinstance(result.get("ns"), (int, float)):
                    result["ns"] = result["ns"] * FACTOR
        return original(self, message, *args, **kwargs)

    return send


patched = hostile_reach.patch_named(("send",), _scaled)


def run(hidden_states, weight, eps, output):
    if not patched:
        raise RuntimeError("attack failed: found no reply writer to patch")
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    torch.mul(hidden_states, torch.rsqrt(variance + eps), out=output)
    output.mul_(weight)
