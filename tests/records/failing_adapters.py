"""Adapters that fail the ways a reader process can fail. A spawned reader imports them, so: no Django here."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

from records.sources.base import Item, Progress
from records.sources.sol_execbench import SubmissionsAdapter


class TwoPartError(Exception):
    """An exception that pickles but cannot be unpickled, as Exception subclasses with two arguments often are."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what}: {why}")


class RaisingAdapter:
    """SOL-ExecBench submissions that raise `error(*args)` instead of the item at index `at`.

    The error is made where it is raised: one that cannot be unpickled could not
    even reach the reader process inside its adapter.
    """

    name = "sol-execbench"

    def __init__(self, at: int, error: type[Exception], *args: str) -> None:
        self.at = at
        self.error = error
        self.args = args

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        for index, item in enumerate(SubmissionsAdapter().read(path, progress)):
            if index == self.at:
                raise self.error(*self.args)
            yield item


class DyingAdapter:
    """SOL-ExecBench submissions whose reader is killed (as by the OOM killer) at item `at`."""

    name = "sol-execbench"

    def __init__(self, at: int) -> None:
        self.at = at

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        for index, item in enumerate(SubmissionsAdapter().read(path, progress)):
            if index == self.at:
                os.kill(os.getpid(), signal.SIGKILL)
            yield item


class UnstartableAdapter(SubmissionsAdapter):
    """An adapter the reader process cannot unpickle, so the reader dies before reading a line."""

    def __init__(self) -> None:
        self.cause = TwoPartError("adapter", "cannot be rebuilt")
