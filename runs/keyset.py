"""Keyset pagination: a page starts after the last row of the page before, named by an opaque cursor.

A list is one or more *parts*, read one after the other (a leaderboard's ranked
runs, then the runs ranked after them, ...; a search's exact matches, then the
partial ones). Each part is the rows matching a condition, in the order of its
keys, all ascending or all descending, the last key unique. A page is read with
`WHERE (keys) > (the cursor's values) ORDER BY keys LIMIT n`, which an index on
the keys answers in the time of the page's own rows, however deep the page.
OFFSET would read and skip every row before it.

The cursor (`?after=`) names the part and the key values of the last row shown,
and how many rows came before (pages say "runs 51-100"), plus what a caller asks
to carry (a leaderboard's rank of that row). It is signed: a cursor from
anywhere else, or edited, reads as no cursor (the first page), never an error,
and a page cannot be made to show a rank it did not compute.

The API and the pages use `read_page`; `normal_cursor` gives the page cache a
cursor's one spelling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.core import signing
from django.db.models import BooleanField, Expression, F, Q, QuerySet, Value
from django.db.models.sql.compiler import SQLCompiler

SALT = "runs.keyset"
MAX_CURSOR_LENGTH = 400


@dataclass(frozen=True)
class Part:
    """The rows of a list matching `where`, in the order of `keys` (field names or expressions)."""

    name: str
    where: Q
    keys: tuple[str | Expression | F, ...]
    descending: bool = False


@dataclass(frozen=True)
class Cursor:
    """Where a page starts: after the row with these key values in this part, `seen` rows into the list."""

    part: str
    values: tuple[Any, ...]
    seen: int
    carried: tuple[Any, ...] = ()


@dataclass
class KeysetPage:
    """One page of rows, and where the next one starts (None: this is the last)."""

    rows: list[Any]
    parts: list[str]  # the part each row came from
    start: int  # rows before this page
    following: Cursor | None  # where the next page starts; None: this page is the last
    cursor: Cursor | None = None  # the one this page was read after
    # How many rows the whole list holds, where the caller knows it; with `more`, at least that many.
    total: int | None = None
    more: bool = False

    @property
    def object_list(self) -> list[Any]:
        return self.rows

    @property
    def next_cursor(self) -> str | None:
        return encode(self.following) if self.following else None

    @property
    def has_next(self) -> bool:
        return self.following is not None

    def carry(self, *values: Any) -> None:
        """Have the next page's cursor carry these values about this page's last row (a rank, say)."""
        if self.following is not None:
            self.following = replace(self.following, carried=values)

    @property
    def has_previous(self) -> bool:
        return self.start > 0

    @property
    def count_label(self) -> str:
        """'1,234', or 'more than 1,000' where the list was counted no further."""
        if self.total is None:
            return ""
        return f"more than {self.total:,}" if self.more else f"{self.total:,}"

    @property
    def first_index(self) -> int:
        return self.start + 1

    @property
    def last_index(self) -> int:
        return self.start + len(self.rows)


def read_page(
    queryset: QuerySet[Any],
    parts: Sequence[Part],
    cursor: Cursor | None,
    size: int,
) -> KeysetPage:
    """The `size` rows after `cursor` through `parts` in turn, and where the page after starts."""
    names = [part.name for part in parts]
    if cursor is not None and cursor.part not in names:
        cursor = None
    rows: list[tuple[Any, Part]] = []
    begin = names.index(cursor.part) if cursor else 0
    for part in parts[begin:]:
        wanted = size + 1 - len(rows)
        if wanted <= 0:
            break
        after = cursor.values if cursor and cursor.part == part.name else None
        rows += [(row, part) for row in _part_rows(queryset, part, after, wanted)]
    more = len(rows) > size
    rows = rows[:size]
    start = cursor.seen if cursor else 0
    following = None
    if more:
        last, part = rows[-1]
        following = Cursor(part.name, key_values(last), start + len(rows))
    return KeysetPage([row for row, _ in rows], [part.name for _, part in rows], start, following, cursor)


def _part_rows(queryset: QuerySet[Any], part: Part, after: tuple[Any, ...] | None, limit: int) -> list[Any]:
    keys = [F(key) if isinstance(key, str) else key for key in part.keys]
    rows = queryset.filter(part.where).annotate(**{f"_key{i}": key for i, key in enumerate(keys)})
    if after is not None:
        if len(after) != len(keys):
            return []
        rows = rows.filter(RowAfter([F(f"_key{i}") for i in range(len(keys))], after, part.descending))
    order = [F(f"_key{i}").desc() if part.descending else F(f"_key{i}").asc() for i in range(len(keys))]
    return list(rows.order_by(*order)[:limit])


def key_values(row: Any) -> tuple[Any, ...]:
    values = []
    index = 0
    while hasattr(row, f"_key{index}"):
        values.append(getattr(row, f"_key{index}"))
        index += 1
    return tuple(values)


class RowAfter(Expression):
    """`(k1, k2, ...) > (v1, v2, ...)` (or `<` for a descending order): SQL's row comparison, which PostgreSQL
    turns into one bound on an index over the keys, and SQLite understands too."""

    conditional = True

    def __init__(self, keys: list[Any], values: Sequence[Any], descending: bool) -> None:
        super().__init__(output_field=BooleanField())
        self.keys = keys
        self.values = list(values)
        self.descending = descending

    def get_source_expressions(self) -> list[Any]:
        return self.keys

    def set_source_expressions(self, expressions: Sequence[Any]) -> None:
        self.keys = list(expressions)

    def as_sql(self, compiler: SQLCompiler, connection: Any) -> tuple[str, list[Any]]:
        left: list[str] = []
        right: list[str] = []
        params: list[Any] = []
        right_params: list[Any] = []
        for key, value in zip(self.keys, self.values, strict=True):
            sql, key_params = compiler.compile(key)
            left.append(sql)
            params += key_params
            sql, value_params = compiler.compile(Value(value, output_field=key.output_field))
            right.append(sql)
            right_params += value_params
        operator = "<" if self.descending else ">"
        return f"({', '.join(left)}) {operator} ({', '.join(right)})", [*params, *right_params]


# -- the cursor -------------------------------------------------------------------------


def encode(cursor: Cursor) -> str:
    values = [_plain(value) for value in cursor.values]
    return signing.dumps([cursor.part, values, cursor.seen, list(cursor.carried)], salt=SALT, compress=True)


def decode(text: str | None) -> Cursor | None:
    """The cursor `text` names; None for no cursor, or one not made here (edited, truncated, garbage)."""
    if not text or len(text) > MAX_CURSOR_LENGTH:
        return None
    try:
        part, values, seen, carried = signing.loads(text, salt=SALT)
        return Cursor(str(part), tuple(_typed(value) for value in values), int(seen), tuple(carried))
    except (signing.BadSignature, ValueError, TypeError, KeyError):
        return None


def normal_cursor(text: str) -> str:
    """The cursor as the page cache keys it: itself when it is one of ours, else empty (the first page)."""
    return text if decode(text) is not None else ""


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"t": value.isoformat()}
    return value


def _typed(value: Any) -> Any:
    if isinstance(value, dict):
        return datetime.fromisoformat(value["t"])
    if value is not None and not isinstance(value, int | float | str):
        raise TypeError("not a key value")
    return value
