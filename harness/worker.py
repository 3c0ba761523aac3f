"""`python -m harness.worker`: the rerun worker (harness.parent.worker), under the name its command lines use."""

from __future__ import annotations

from harness.parent.worker import main

if __name__ == "__main__":
    main()
