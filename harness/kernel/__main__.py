"""`python -m harness.kernel CONFIG SCRATCH CALLS_FD REPLIES_FD EXCHANGE_FD`: the kernel's process
(harness.kernel.process)."""

from __future__ import annotations

import sys

from harness.kernel.process import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
