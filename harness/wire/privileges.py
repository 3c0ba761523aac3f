"""The user every sandboxed process becomes: the judge's and each served process's first step."""

from __future__ import annotations

import os

UNPRIVILEGED_ID = 65534


def drop_privileges() -> None:
    """In a sandboxed process bwrap set up as root: become uid/gid 65534 with no groups, before reading
    anything a solution controls."""
    os.setgroups([])
    os.setgid(UNPRIVILEGED_ID)
    os.setuid(UNPRIVILEGED_ID)
