import torch

# A configuration slip: the epsilon of a different model, applied whatever the caller passes.
EPS = 1e-2


def rmsnorm(hidden_states, weight, eps, output):
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    torch.mul(hidden_states, torch.rsqrt(variance + EPS), out=output)
    output.mul_(weight)
