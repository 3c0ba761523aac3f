"""How one evaluation runs: every option of `python -m harness run`, checked once and passed whole.

The command line builds one `EvaluationOptions` from its arguments, `harness.evaluate` from its keywords (tests and
bench/ scripts), a rerun worker through the command line (harness.parent.worker `harness_command`); from there the
one object goes down the chain: the evaluation, its control, the job, the jail's limits and the result.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from harness.judge.protocols import DEFAULT_PROTOCOL, PROTOCOL_NAMES, protocol_named
from harness.parent.errors import HarnessInputError

DEFAULT_TIMEOUT = 300.0
DEFAULT_MEMORY_MB = 8192
DEFAULT_SCRATCH_MB = 1024
# Seconds of timed pairs per case at most, when a precision asks for more pairs than the iterations make.
DEFAULT_CASE_BUDGET = 20.0
# Bounds the parent's statistics (and the judge's sample lines) whatever is asked for.
MAX_ITERATIONS = 10_000
UNSANDBOXED_VARIABLE = "KERNELINDEX_HARNESS_UNSANDBOXED"
_DEVICE = re.compile(r"cpu|cuda(:\d+)?")


@dataclass(frozen=True)
class EvaluationOptions:
    """The options of one evaluation; raises HarnessInputError, naming the option, for one that is unusable.

    Warm-up and timed iterations default to the protocol's. One correctness round of a case, drawn at random,
    draws from the case's own seed (reproducible), unless `fresh_inputs`. With a `precision` (a fraction), pairs
    are added past the timed iterations until each case's speedup interval is within it of the median, for at
    most `case_budget` seconds a case.
    """

    # The reference to judge against, in place of the definition's own.
    reference: Path | None = None
    device: str = "cpu"
    timeout: float = DEFAULT_TIMEOUT
    memory_mb: int | None = DEFAULT_MEMORY_MB
    sandbox: bool = True
    warmup: int | None = None
    iterations: int | None = None
    # Where relative safetensors paths start.
    data_root: Path | None = None
    protocol: str = DEFAULT_PROTOCOL
    scratch_mb: int = DEFAULT_SCRATCH_MB
    fresh_inputs: bool = False
    precision: float | None = None
    case_budget: float = DEFAULT_CASE_BUDGET

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOL_NAMES:
            raise HarnessInputError(
                "--protocol", None, None, f"expected one of {', '.join(PROTOCOL_NAMES)}, not {self.protocol!r}"
            )
        if not _DEVICE.fullmatch(self.device):
            raise HarnessInputError("--device", None, None, f"expected cpu, cuda or cuda:N, not {self.device!r}")
        if self.timeout <= 0:
            raise HarnessInputError("--timeout", None, None, "must be more than 0 seconds")
        if self.memory_mb is not None and self.memory_mb <= 0:
            raise HarnessInputError("--memory-mb", None, None, "must be more than 0")
        if self.scratch_mb <= 0:
            raise HarnessInputError("--scratch-mb", None, None, "must be more than 0")
        if self.warmup_iterations < 0 or not 1 <= self.timed_iterations <= MAX_ITERATIONS:
            raise HarnessInputError(
                "--iterations", None, None, f"need 1 to {MAX_ITERATIONS} timed iterations and no negative warm-up"
            )
        if self.precision is not None and not 0 < self.precision < 1:
            raise HarnessInputError("--precision", None, None, "must be a fraction between 0 and 1 (0.05 is ±5 %)")
        if not 0 < self.case_budget <= 3600:
            raise HarnessInputError("--case-budget", None, None, "must be more than 0 and at most 3600 seconds")

    @property
    def warmup_iterations(self) -> int:
        """Warm-up iterations per case: as asked, else the protocol's."""
        return protocol_named(self.protocol).timing.warmup if self.warmup is None else self.warmup

    @property
    def timed_iterations(self) -> int:
        """Timed iterations per case: as asked, else the protocol's."""
        return protocol_named(self.protocol).timing.iterations if self.iterations is None else self.iterations

    @property
    def sandboxed(self) -> bool:
        """Whether the processes run in bubblewrap: unless asked not to, here or by KERNELINDEX_HARNESS_UNSANDBOXED."""
        return self.sandbox and os.environ.get(UNSANDBOXED_VARIABLE) != "1"
