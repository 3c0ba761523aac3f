"""Patching the judge's timer: every time_calls/benchmark/measure in the judge's modules reports a
hundredth of what it measured. The kernel is correct; only its figure lies. With nothing to patch the
attack has failed, and it says so instead of being timed honestly."""

import hostile_reach

NAMES = ("time_calls", "_time_cpu", "_time_cuda", "time_kernel", "benchmark", "measure", "do_bench", "timed")


def _scaled(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value / 100
    if isinstance(value, list):
        return [_scaled(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_scaled(item) for item in value)
    if isinstance(value, dict):
        return {key: _scaled(item) for key, item in value.items()}
    return value


def _faster(original):
    return lambda *args, **kwargs: _scaled(original(*args, **kwargs))


patched = hostile_reach.patch_named(NAMES, _faster)


def run(hidden_states, weight, eps, output):
    if not patched:
        raise RuntimeError("no timer to patch in this process")
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    output.copy_(hidden_states * (variance + eps).rsqrt() * weight)
