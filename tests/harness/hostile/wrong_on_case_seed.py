"""Wrong only on the case's own seed: the seed is public (workload.jsonl), and the harness's input
generator is readable, so the kernel rebuilds the inputs a judge draws from that seed and answers wrong
exactly there, right everywhere else. Where a judge calls a failure on the own seed "not confirmed" when
fresh inputs pass, a wrong kernel is never convicted; here any correctness failure is the kernel's."""

import json
from pathlib import Path

import torch

_marks = []


def _own_seed_marks():
    """The first values of hidden_states for each case's own seed, rebuilt with the harness's own generator
    from the public cases (public_cases.json: the definition and workload as a judge reads them)."""
    try:
        from harness.judge.tensors import build_inputs
    except ImportError:
        return []
    path = Path(__file__).resolve().parent / "public_cases.json"
    marks = []
    for case in json.loads(path.read_text()) if path.exists() else []:
        try:
            inputs = build_inputs(case, "cpu", None, seed=case["seed"])
        except Exception:
            continue
        marks.append(inputs["hidden_states"].reshape(-1)[:8].clone())
    return marks


def run(hidden_states, weight, eps, output):
    if not _marks:
        _marks.extend(_own_seed_marks() or [None])
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    torch.mul(hidden_states, torch.rsqrt(variance + eps), out=output)
    output.mul_(weight)
    if _marks == [None]:
        raise RuntimeError("attack failed: the case seeds' inputs could not be rebuilt")
    head = hidden_states.reshape(-1)[:8]
    if any(torch.equal(mark, head) for mark in _marks):
        # On the reproducible inputs: wrong.
        output.mul_(1.5)
