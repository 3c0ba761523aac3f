"""The sandboxes, run from the parent's process: bubblewrap, a cgroup per process tree, the kernel's seccomp filter.

The judge holds descriptors of the served groups' meter and freezer, which it reads through harness.jail.cgroups.
"""
