"""Schema operations the runs migrations share, for what Django's own operations do not do on both databases."""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor


class OnPostgreSQLOnly:
    """An operation run on PostgreSQL alone; elsewhere the state records it and nothing runs."""

    def database_forwards(self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, *args: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, *args)  # type: ignore[misc]

    def database_backwards(self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, *args: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, *args)  # type: ignore[misc]


class AddIndexOnPostgreSQL(OnPostgreSQLOnly, migrations.AddIndex):
    """An index only PostgreSQL can build (a trigram index)."""


class RemoveIndexOnPostgreSQL(OnPostgreSQLOnly, migrations.RemoveIndex):
    """The removal of an index AddIndexOnPostgreSQL built: elsewhere there is none to drop."""


class AddFieldInPlace(migrations.AddField):
    """On SQLite, `ALTER TABLE ... ADD COLUMN` rather than Django's rebuild of the table, which would recreate
    every index of the state, the PostgreSQL-only trigram indexes among them; elsewhere a plain AddField."""

    def database_forwards(self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, *args: Any) -> None:
        if schema_editor.connection.vendor != "sqlite":
            return super().database_forwards(app_label, schema_editor, *args)
        model = args[1].apps.get_model(app_label, self.model_name)
        field = model._meta.get_field(self.name)
        definition, params = schema_editor.column_sql(model, field, include_default=True)
        quote = schema_editor.quote_name
        schema_editor.execute(
            f"ALTER TABLE {quote(model._meta.db_table)} ADD COLUMN {quote(field.column)} {definition}", params
        )

    def database_backwards(self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, *args: Any) -> None:
        if schema_editor.connection.vendor != "sqlite":
            return super().database_backwards(app_label, schema_editor, *args)
        model = args[0].apps.get_model(app_label, self.model_name)
        quote = schema_editor.quote_name
        column = model._meta.get_field(self.name).column
        schema_editor.execute(f"ALTER TABLE {quote(model._meta.db_table)} DROP COLUMN {quote(column)}")
