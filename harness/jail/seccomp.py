"""A seccomp filter for the kernel's sandbox, as the classic BPF program bubblewrap's `--seccomp FD` loads.

It denies what a solution could use to hold memory no limit sees, to leave
its namespaces or to reach another process: memfd_create (memory in no
process's RSS), unshare and the namespace flags of clone (a nested user
namespace could mount a tmpfs of its own), mount and the new mount API, setns,
ptrace and process_vm_*, keyrings, bpf, perf_event_open, userfaultfd and
io_uring (whose operations bypass seccomp).
clone3 answers ENOSYS, which makes the C library fall back to clone, whose
flags a filter can read (clone3 passes them in memory, out of its reach).
A call from another architecture's ABI (x86's 32-bit entry, x32) kills the
process, since the numbers below would not mean the same calls there.

Written by hand rather than with libseccomp, which the harness hosts need not
have: a short deny list is a few dozen instructions.
"""

from __future__ import annotations

import errno
import platform
import struct

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little-endian).
_NR_OFFSET, _ARCH_OFFSET, _ARG0_LOW_OFFSET = 0, 4, 16
_LOAD_WORD, _JUMP_EQUAL, _JUMP_AT_LEAST, _JUMP_ANY_BIT, _RETURN = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL_PROCESS = 0x7FFF0000, 0x80000000
_ERRNO = 0x00050000
_X32_BIT = 0x40000000
# CLONE_NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_NAMESPACE_FLAGS = 0x00000080 | 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

# (audit architecture, clone, clone3, {denied call: number}) per machine, from the kernel's syscall tables.
_TABLES: dict[str, tuple[int, int, int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        56,
        435,
        {
            "memfd_create": 319,
            "memfd_secret": 447,
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "io_uring_setup": 425,
        },
    ),
    "aarch64": (
        0xC00000B7,
        220,
        435,
        {
            "memfd_create": 279,
            "memfd_secret": 447,
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "io_uring_setup": 425,
        },
    ),
}


class SeccompUnavailableError(RuntimeError):
    pass


def kernel_filter(machine: str | None = None, *, allow_memfd: bool = False) -> bytes:
    """The filter's program: an array of struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}."""
    machine = machine or platform.machine()
    if machine not in _TABLES:
        raise SeccompUnavailableError(f"no seccomp table for this machine ({machine})")
    arch, clone, clone3, denied = _TABLES[machine]
    numbers = [number for name, number in denied.items() if not (allow_memfd and name == "memfd_create")]
    # Straight-line code; each jump is relative to the next instruction. The returns sit at the end:
    # [..., deny: RET EPERM, enosys: RET ENOSYS, kill: RET KILL, allow: RET ALLOW].
    body: list[tuple[int, int | str, int | str, int]] = [
        (_LOAD_WORD, 0, 0, _ARCH_OFFSET),
        (_JUMP_EQUAL, 0, "kill", arch),
        (_LOAD_WORD, 0, 0, _NR_OFFSET),
        (_JUMP_AT_LEAST, "kill", 0, _X32_BIT) if machine == "x86_64" else (_JUMP_EQUAL, 0, 0, 0xFFFFFFFF),
        (_JUMP_EQUAL, "enosys", 0, clone3),
        *[(_JUMP_EQUAL, "deny", 0, number) for number in numbers],
        (_JUMP_EQUAL, 0, "allow", clone),
        (_LOAD_WORD, 0, 0, _ARG0_LOW_OFFSET),
        (_JUMP_ANY_BIT, "deny", "allow", _NAMESPACE_FLAGS),
    ]
    returns = {
        "deny": _ERRNO | errno.EPERM,
        "enosys": _ERRNO | errno.ENOSYS,
        "kill": _KILL_PROCESS,
        "allow": _ALLOW,
    }
    labels = {name: len(body) + index for index, name in enumerate(returns)}
    program = b""
    for index, (code, true, false, k) in enumerate(body):
        program += struct.pack("<HBBI", code, _offset(true, index, labels), _offset(false, index, labels), k)
    for value in returns.values():
        program += struct.pack("<HBBI", _RETURN, 0, 0, value)
    return program


def _offset(target: int | str, index: int, labels: dict[str, int]) -> int:
    if isinstance(target, int):
        return target
    distance = labels[target] - index - 1
    assert 0 <= distance < 256, "a seccomp jump out of reach"
    return distance
