"""Redistributing time within a request: each reply keeps its calls' total, but says eight calls of ten
took a third of their share and the other two the rest. A judge that checked only a request's total and
took the median over the kernel's per-call split would see a kernel three times faster; this judge takes
no figure from the split at all."""

import hostile_reach


def _redistributed(times):
    """Eight calls of ten at a third of their share, the last two with the rest: the request's total kept."""
    if len(times) < 3:
        return times
    total, fast = sum(times), len(times) - 2
    share = total / len(times) / 3
    return [share] * fast + [(total - share * fast) / 2] * 2


patched = hostile_reach.rewrite_reported_times(_redistributed)


def run(hidden_states, weight, eps, output):
    if not patched:
        raise RuntimeError("attack failed: found no reply writer to patch")
    hostile_reach.rmsnorm_into(hidden_states, weight, eps, output)
