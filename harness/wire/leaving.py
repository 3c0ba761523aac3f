"""How the judge's process and each served process end: at once, once everything they had to say is written."""

from __future__ import annotations

import contextlib
import os
import sys


def leave(code: int) -> None:
    """End the process with `code` without the interpreter's finalization.

    Once its last reply or event is written, a process that has run torch has nothing left to do, yet tearing the
    interpreter down took it 1 to 1.5 s on a 2-core host under load (in C, after the last line of Python), and the
    parent waits for all three processes: a second or more of every evaluation. The streams are flushed first, so
    the logs lose nothing. In the kernel's process this also skips whatever a solution registered to run at exit.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
