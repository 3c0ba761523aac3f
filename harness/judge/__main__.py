"""`python -m harness.judge JOB_DIR SCRATCH DESCRIPTORS`: the judge's process (harness.judge.process)."""

from __future__ import annotations

import sys

from harness.judge.process import main
from harness.wire.leaving import leave

if __name__ == "__main__":
    leave(main(sys.argv[1:]))
