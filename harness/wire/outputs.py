"""A call's return value as one value per declared output: how the kernel's process reads what a solution
returned, and how the judge reads what its reference returned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def outputs_as_list(returned: Any, names: Sequence[str]) -> list[Any]:
    """A solution's or reference's return value as one value per declared output."""
    if isinstance(returned, Mapping):
        return [returned.get(name) for name in names]
    if isinstance(returned, (tuple, list)):
        return list(returned)
    return [returned]
