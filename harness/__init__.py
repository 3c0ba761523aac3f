"""The KernelIndex benchmark harness: evaluate a solution against a definition's reference on a workload.

It reads the public SOL-ExecBench / FlashInfer-Bench formats, runs the
solution in a sandboxed child process, checks it as SOL-ExecBench does, and
times the reference and the solution alike. It imports no Django, and the
package itself imports nothing heavy: torch is imported by the child only.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

HARNESS_NAME = "kernelindex-harness"
HARNESS_VERSION = "0.3.4"

if TYPE_CHECKING:
    from harness.jail.sandbox import SandboxUnavailableError
    from harness.parent.api import evaluate, evaluate_with
    from harness.parent.errors import HarnessInputError
    from harness.parent.options import EvaluationOptions
    from harness.parent.results import EvaluationResult


# The records modules the harness's processes load: `python -m harness run` loads these (the public formats'
# model decides what it accepts, the hardware registry names the host's class); the judge and the kernel's side
# load none. tests/harness/test_digest.py fails when a process loads one that is not here, or one here is unused.
RECORDS_MODULES = (
    "records/__init__.py",
    "records/axes.py",
    "records/errors.py",
    "records/formats.py",
    "records/hardware.py",
)


def digested_files() -> list[Path]:
    """The files harness_digest covers, in the order it reads them: the harness's sources, then RECORDS_MODULES."""
    package = Path(__file__).resolve().parent
    return [*sorted(package.rglob("*.py")), *(package.parent / name for name in RECORDS_MODULES)]


def harness_digest() -> str:
    """sha256 over the harness's source files and the records modules it runs (path and content): 'sha256:<hex>'."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in digested_files():
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()


_LAZY = {
    "evaluate": "harness.parent.api",
    "evaluate_with": "harness.parent.api",
    "EvaluationOptions": "harness.parent.options",
    "EvaluationResult": "harness.parent.results",
    "HarnessInputError": "harness.parent.errors",
    "SandboxUnavailableError": "harness.jail.sandbox",
}


def __getattr__(name: str) -> Any:
    # The child imports this package too: it should not pay for pydantic to reach harness.child.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


__all__ = [
    "HARNESS_NAME",
    "HARNESS_VERSION",
    "EvaluationOptions",
    "EvaluationResult",
    "HarnessInputError",
    "SandboxUnavailableError",
    "digested_files",
    "evaluate",
    "evaluate_with",
    "harness_digest",
]
