"""Scaling to the slack: every reported time is 0.6 of the real one, under any check that allows a
quarter or a third of slack. The figure is the judge's, so it gains nothing: it passes no faster than
the honest kernel."""

import hostile_reach

FACTOR = 0.6

patched = hostile_reach.rewrite_reported_times(lambda times: [ns * FACTOR for ns in times])


def run(hidden_states, weight, eps, output):
    if not patched:
        raise RuntimeError("attack failed: found no reply writer to patch")
    hostile_reach.rmsnorm_into(hidden_states, weight, eps, output)
