"""The one error the harness reports for unusable input: which file, line and field, and what is wrong."""

from __future__ import annotations

from records.errors import RecordError


class HarnessInputError(RecordError):
    """An argument or input file the harness cannot evaluate: a record error, worded as an import's are."""
