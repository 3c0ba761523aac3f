"""Precomputing at import: read every case (seed, shapes) the kernel can find, rebuild its inputs (with
the judge's own generator when it can be imported), and answer them all before the first call; a call
then only copies the answer out. Inputs it did not foresee get the honest computation, so this attack
may pass, but only as slowly as the honest kernel."""

import hostile_reach
import torch


def _rebuild(case):
    try:
        from harness.judge.tensors import build_inputs

        return list(build_inputs(case, "cpu", None).values())
    except Exception:
        generator = torch.Generator().manual_seed(int(case["seed"]))
        values = []
        for spec in case["inputs"].values():
            if spec.get("value") is not None:
                values.append(spec["value"])
            else:
                values.append(torch.randn(spec["shape"], generator=generator).to(getattr(torch, spec["dtype"])))
        return values


def _key(hidden_states):
    return (tuple(hidden_states.shape), tuple(hidden_states.reshape(-1)[:8].tolist()))


def _rmsnorm(hidden_states, weight, eps):
    return hidden_states * torch.rsqrt(hidden_states.square().mean(dim=-1, keepdim=True) + eps) * weight


_answers = {}
for _case in hostile_reach.cases():
    try:
        _hidden, _weight, _eps = _rebuild(_case)
        _answers[_key(_hidden)] = _rmsnorm(_hidden, _weight, _eps)
    except Exception:
        continue


def run(hidden_states, weight, eps, output):
    answer = _answers.get(_key(hidden_states))
    if answer is not None:
        output.copy_(answer)
        return
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    torch.mul(hidden_states, torch.rsqrt(variance + eps), out=output)
    output.mul_(weight)
