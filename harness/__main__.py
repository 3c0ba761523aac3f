"""`python -m harness run ...`: the command line (harness.parent.cli)."""

from __future__ import annotations

import sys

from harness.parent.cli import main

if __name__ == "__main__":
    sys.exit(main())
