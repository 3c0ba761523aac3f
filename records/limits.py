"""How much an import reads: limits on size, nesting and strings, checked before a record goes anywhere.

A source file is somebody else's output. Without limits one 200 MB line took a
gigabyte of memory and made a run page that never finished rendering, deep
nesting overflowed the parser's stack, and a NUL character in a title reached
PostgreSQL, which cannot store it. The limits sit far above anything a real
source publishes (the largest line in the data pack is 24 kB, its deepest
value 6 levels, its longest string 23 kB):

| limit | value |
|---|---|
| a JSONL line | 4 MiB |
| a whole-file JSON document | 32 MiB |
| nesting of arrays and objects | 64 levels |
| one string (a value or a key) | 1 MiB (in characters) |
| NUL (`\\u0000`) in a string | refused |

Most lines are checked without looking inside them: a line shorter than the
string limit cannot hold a longer string, one with fewer brackets than the depth
limit cannot nest deeper, and one without the text `\\u0000` holds no NUL.
"""

from __future__ import annotations

import json
from typing import Any

from records.canonical import parse_json

MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 64
MAX_STRING_CHARS = 1024 * 1024
NUL_ESCAPE = "\\u0000"


class LimitError(ValueError):
    """A value over a limit; `field` is the path to it (`spec.cases.3.title`), None for the whole value."""

    def __init__(self, field: str | None, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(message)


def parse_limited(raw: bytes) -> Any:
    """Strict JSON within the limits above (apart from size, which the reader checks before reading it all)."""
    # As json.loads reads bytes: UTF-8, -16 or -32, a UTF-8 byte order mark allowed.
    text = raw.decode(json.detect_encoding(raw), "surrogatepass")
    try:
        value = parse_json(text)
    except RecursionError:
        raise LimitError(None, f"nested deeper than {MAX_DEPTH} levels (the limit)") from None
    if len(text) > MAX_STRING_CHARS or text.count("[") + text.count("{") > MAX_DEPTH or NUL_ESCAPE in text:
        check_value(value)
    return value


def check_value(value: Any) -> None:
    """Raise LimitError for the first string too long or holding NUL, or the first value nested too deep."""
    stack: list[tuple[Any, int, tuple[str, ...]]] = [(value, 1, ())]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, str):
            _check_string(item, path)
            continue
        if not isinstance(item, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise LimitError(_field(path), f"nested deeper than {MAX_DEPTH} levels (the limit)")
        if isinstance(item, dict):
            for key, child in item.items():
                _check_string(key, (*path, key))
                stack.append((child, depth + 1, (*path, key)))
        else:
            stack.extend((child, depth + 1, (*path, str(index))) for index, child in enumerate(item))


def _check_string(text: str, path: tuple[str, ...]) -> None:
    if "\0" in text:
        raise LimitError(_field(path), "holds a NUL character (\\u0000), which is refused")
    if len(text) > MAX_STRING_CHARS:
        raise LimitError(_field(path), f"a string of {len(text)} characters; the limit is {MAX_STRING_CHARS}")


def _field(path: tuple[str, ...], shown: int = 12) -> str | None:
    parts = [part.replace("\0", "\\u0000") for part in path[:shown]]
    return ".".join(parts) + (".…" if len(path) > shown else "") if parts else None
