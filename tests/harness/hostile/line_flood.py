"""A line flood: at import, 64 MiB without a newline on every open descriptor. The kernel then writes
nothing: the judge must still read its own messages, fail the kernel and finish in time."""

import hostile_reach

hostile_reach.write_everywhere(b"x" * (64 * 2**20))


def run(hidden_states, weight, eps, output):
    pass
