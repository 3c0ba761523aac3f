"""Replacing the clocks: time.perf_counter_ns (and its kin) run at a hundredth of real speed, and so
does every copy of them kept outside the standard library, the judge's included, so that no copy
differs from the clock. The kernel is correct; only its figure lies. With no copy kept by the judge
the attack has failed, and it says so instead of being timed honestly."""

import sys
import sysconfig
import time

import hostile_reach

CLOCKS = ("perf_counter_ns", "perf_counter", "monotonic_ns", "monotonic")
_STDLIB = sysconfig.get_paths()["stdlib"]


def _slow(name, original):
    begun = original()
    if name.endswith("_ns"):
        return lambda: begun + (original() - begun) // 100
    return lambda: begun + (original() - begun) / 100


originals = {name: getattr(time, name) for name in CLOCKS}
fakes = {name: _slow(name, original) for name, original in originals.items()}
judge = {id(module) for module in hostile_reach.judge_modules()}
saved_copies = []
for module_name, module in list(sys.modules.items()):
    path = str(getattr(module, "__file__", None) or "")
    if module is time or module is None or (path.startswith(_STDLIB) and "-packages" not in path):
        continue
    for attribute, value in list(getattr(module, "__dict__", {}).items()):
        for name, original in originals.items():
            if value is original:
                try:
                    setattr(module, attribute, fakes[name])
                except (AttributeError, TypeError):
                    continue
                if id(module) in judge:
                    saved_copies.append(f"{module_name}.{attribute}")
for name, fake in fakes.items():
    setattr(time, name, fake)


def run(hidden_states, weight, eps, output):
    if not saved_copies:
        raise RuntimeError("the judge keeps no copy of the clock in this process")
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    output.copy_(hidden_states * (variance + eps).rsqrt() * weight)
