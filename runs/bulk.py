"""Bulk inserts for the importer: COPY on PostgreSQL, the ORM's bulk_create elsewhere.

An import writes four rows per run. Through bulk_create most of that time went
into building a statement with one bound parameter per value; COPY streams the
rows instead, and the server indexes them while the next ones are formatted.
Rows are tuples of Python values in the order of `columns`; every other field
of the model takes its default, and auto_now fields the time of the insert, as
they would through the ORM.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg
from django.db import connection, models
from django.utils import timezone


class BulkInserter:
    """Inserts rows of one model, always the same columns; with `ignore_conflicts`, rows already there are skipped."""

    def __init__(self, model: type[models.Model], columns: Sequence[str], *, ignore_conflicts: bool = False) -> None:
        self.model = model
        self.columns = tuple(columns)
        self.ignore_conflicts = ignore_conflicts
        fields = {field.attname: field for field in model._meta.concrete_fields}
        unknown = set(self.columns) - set(fields)
        if unknown:
            raise ValueError(f"{model.__name__} has no fields {', '.join(sorted(unknown))}")
        self.fields = [fields[column] for column in self.columns]
        pk = model._meta.pk
        self.defaulted = [
            field
            for name, field in fields.items()
            if name not in self.columns and not (field is pk and isinstance(field, models.AutoField))
        ]
        self.json_encoders = {
            position: field.encoder for position, field in enumerate(self.fields) if isinstance(field, models.JSONField)
        }

    def insert(self, rows: Sequence[tuple[Any, ...]], *, returning_ids: bool = False) -> list[int]:
        """Insert the rows; with `returning_ids`, the primary keys they got, in order."""
        if not rows:
            return []
        if connection.vendor == "postgresql":
            return self._copy(rows, returning_ids)
        objects = [self.model(**dict(zip(self.columns, row, strict=True))) for row in rows]
        self.model._default_manager.bulk_create(objects, ignore_conflicts=self.ignore_conflicts, batch_size=2000)
        return [obj.pk for obj in objects] if returning_ids else []

    # -- PostgreSQL ------------------------------------------------------------

    def _copy(self, rows: Sequence[tuple[Any, ...]], returning_ids: bool) -> list[int]:
        if self.ignore_conflicts:
            if returning_ids:
                raise ValueError("ids of rows that may be skipped as conflicts cannot be returned")
            self._insert_ignoring_conflicts(rows)
            return []
        defaults = tuple(self._default(field) for field in self.defaulted)
        columns = [field.column for field in (*self.fields, *self.defaulted)]
        ids: list[int] = self._next_ids(len(rows)) if returning_ids else []
        if ids:
            columns.insert(0, self.model._meta.pk.column)
        quote = connection.ops.quote_name
        table = quote(self.model._meta.db_table)
        column_list = ", ".join(quote(column) for column in columns)
        with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {table} ({column_list}) FROM STDIN") as copy:
            for index, row in enumerate(rows):
                values = self._prepared(row) + defaults
                copy.write_row((ids[index], *values) if ids else values)
        return ids

    def _insert_ignoring_conflicts(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Rows that may exist already: each column as one binary array, unnested, ON CONFLICT DO NOTHING.

        COPY has no ON CONFLICT. Staging the rows in a temporary table and
        copying them on from there cost PostgreSQL a third more than this.
        """
        quote = connection.ops.quote_name
        columns = ", ".join(quote(field.column) for field in (*self.fields, *self.defaulted))
        arrays = ", ".join(f"%b::{field.db_type(connection)}[]" for field in self.fields)
        defaults = "".join(", %b" for _ in self.defaulted)
        values = [list(column) for column in zip(*(self._prepared(row) for row in rows), strict=True)]
        # A cursor that binds on the server: Django's binds in the client, as SQL literals.
        with connection.cursor(), psycopg.Cursor(connection.connection) as cursor:
            cursor.execute(
                f"INSERT INTO {quote(self.model._meta.db_table)} ({columns}) "
                f"SELECT *{defaults} FROM unnest({arrays}) ON CONFLICT DO NOTHING",
                [*(self._default(field) for field in self.defaulted), *values],  # in the order they appear
            )

    def _prepared(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        """JSON values as JSON text, which PostgreSQL hands to the column's own input function."""
        if not self.json_encoders:
            return row
        values = list(row)
        for position, encoder in self.json_encoders.items():
            value = values[position]
            if value is not None:
                values[position] = "{}" if value == {} else json.dumps(value, cls=encoder)
        return tuple(values)

    def _default(self, field: models.Field[Any, Any]) -> Any:
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            return timezone.now()
        return field.get_db_prep_save(field.get_default(), connection)

    def _next_ids(self, count: int) -> list[int]:
        pk = self.model._meta.pk
        assert pk is not None
        with connection.cursor() as cursor:
            # The sequence is looked up once, not once for every id drawn.
            cursor.execute(
                "SELECT nextval(sequence) FROM (SELECT pg_get_serial_sequence(%s, %s)::regclass AS sequence) AS s, "
                "generate_series(1, %s)",
                [self.model._meta.db_table, pk.column, count],
            )
            return [row[0] for row in cursor.fetchall()]
