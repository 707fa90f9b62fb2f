"""The suite's SQLite backend: Django's, but a flush leaves the content types and permissions
as they are (`tests.db_backends`)."""

from django.db.backends.sqlite3 import base, operations

from tests.db_backends import flushed


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        return super().sql_flush(
            style, flushed(tables), reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
