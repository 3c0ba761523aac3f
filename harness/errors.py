"""The one error the harness reports for unusable input: which file, line and field, and what is wrong."""

from __future__ import annotations

from pathlib import Path


class HarnessInputError(Exception):
    """An argument or input file the harness cannot evaluate. `line` is None for whole-file JSON documents."""

    def __init__(self, path: Path | str, line: int | None, field: str | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = [self.path]
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field:
            where.append(f"field {self.field}")
        return f"{', '.join(where)}: {self.message}"
