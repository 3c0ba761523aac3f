"""Turning an exception into a status and a reason a person can act on."""

from __future__ import annotations

import traceback

_REASON_CHARS = 2000
# What torch raises when code asks for CUDA where there is none: a build without it, no driver, no device.
_NO_CUDA = (
    "torch not compiled with cuda enabled",
    "found no nvidia driver",
    "no cuda gpus are available",
    "cuda driver initialization failed",
)


def failure_text(error: BaseException) -> str:
    """The exception's last lines: the innermost frames and the message, which is what a person acts on."""
    lines = traceback.format_exception(type(error), error, error.__traceback__, limit=-3)
    text = "".join(lines).strip()
    return text if len(text) <= _REASON_CHARS else "…" + text[-_REASON_CHARS:]


def is_out_of_memory(error: BaseException) -> bool:
    message = str(error).lower()
    return (
        isinstance(error, MemoryError)
        or type(error).__name__ == "OutOfMemoryError"
        or "out of memory" in message
        or "can't allocate memory" in message
    )


def needs_missing_cuda(error: BaseException) -> bool:
    """The code asked for a CUDA device this host does not have (as a reference that hard-codes device='cuda')."""
    message = str(error).lower()
    return any(phrase in message for phrase in _NO_CUDA)


def failure_status(error: BaseException, otherwise: str = "RUNTIME_ERROR") -> str:
    return "OUT_OF_MEMORY" if is_out_of_memory(error) else otherwise
