"""How much of the host's CPU time other work used while the judge timed a case.

The evidence rule (records.rerun) allows for the spread between whole
evaluations of one kernel, and that spread depends on the host: evaluations
on a quiet host agree within about a tenth, while beside other work a loop
of small operations is slowed more than a single large call, and whole
evaluations of one kernel move by up to half (bench/verdicts). So the judge
says how quiet the host was, and the rule allows the spread of that kind of
host.

The figure is the judge's, over a case's timed pairs: every CPU's busy time
from /proc/stat (everything but idle and I/O wait, steal included: a
hypervisor's other guests are other work too), less the CPU time of the
judge's own process and of both served groups, as a share of the CPUs' time
over the span. The kernel cannot lower it: its own work is in its group and
subtracted. It can raise it only by work the kernel's own threads do for it
(reclaim under memory pressure), which makes the rule more lenient, never
stricter, so the most it gains is an undecided rerun instead of a conviction.
/proc/stat counts in clock ticks: a share over a few seconds is within a few
hundredths. The share is of the CPUs the judge may run on (its affinity):
where those are fewer than the host's, the other CPUs' work counts against
them, which errs towards a busy host, the lenient side.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

PROC_STAT = Path("/proc/stat")
TICK_NS = 1_000_000_000 / os.sysconf("SC_CLK_TCK")
# The fields of /proc/stat's cpu lines that are not busy: idle and iowait (user, nice, system, irq, softirq and
# steal are; guest time is counted in user already).
_NOT_BUSY = (3, 4)
_BUSY_FIELDS = 8


@dataclass(frozen=True)
class Mark:
    """The host's and the judge's counters at one moment; `served_ns` is the served groups' CPU time."""

    busy_ns: float
    cpus: int
    judge_ns: int
    served_ns: float
    wall_ns: int


def mark(served_ns: float | None) -> Mark | None:
    """The counters now, or None where the host does not show them (no /proc/stat, no served group's CPU
    time): then the host's load is unknown, which the rule treats as a busy host."""
    if served_ns is None:
        return None
    host = _host_busy_ns()
    if host is None:
        return None
    busy_ns, cpus = host
    return Mark(busy_ns, min(cpus, _usable_cpus() or cpus), time.process_time_ns(), served_ns, time.perf_counter_ns())


def other_share(start: Mark | None, end: Mark | None) -> float | None:
    """The share of every CPU's time between two marks that went to work other than the judge's and the
    served groups', between 0 and 1."""
    if start is None or end is None or end.wall_ns <= start.wall_ns:
        return None
    ours = (end.judge_ns - start.judge_ns) + (end.served_ns - start.served_ns)
    other = (end.busy_ns - start.busy_ns) - ours
    return min(max(other / ((end.wall_ns - start.wall_ns) * end.cpus), 0.0), 1.0)


def _usable_cpus() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _host_busy_ns() -> tuple[float, int] | None:
    """Every CPU's busy time so far, and how many CPUs /proc/stat counts."""
    try:
        lines = PROC_STAT.read_text().splitlines()
    except OSError:
        return None
    total = next((line.split() for line in lines if line.startswith("cpu ")), None)
    cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    if not total or len(total) <= _BUSY_FIELDS or not cpus:
        return None
    fields = [int(value) for value in total[1 : _BUSY_FIELDS + 1]]
    busy = sum(value for index, value in enumerate(fields) if index not in _NOT_BUSY)
    return busy * TICK_NS, cpus
