"""`python -m harness.kernel CONFIG SCRATCH CALLS_FD REPLIES_FD EXCHANGE_FD`: the kernel's process
(harness.kernel.process)."""

from __future__ import annotations

import sys

from harness.kernel.process import main
from harness.wire.leaving import leave

if __name__ == "__main__":
    leave(main(sys.argv[1:]))
