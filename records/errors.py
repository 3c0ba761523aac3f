"""The one error an import reports: which file, line and field, and what is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class RecordError(Exception):
    """A record that cannot be imported. `line` is None for whole-file JSON documents."""

    def __init__(self, path: Path | str, line: int | None, field: str | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled by its four parts (Exception's default would pass only the message back to
        # __init__), so that a reader process can send the error to the importer.
        return (type(self), (self.path, self.line, self.field, self.message), self.__dict__)

    def __str__(self) -> str:
        where = [self.path]
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field:
            where.append(f"field {self.field}")
        return f"{', '.join(where)}: {self.message}"
