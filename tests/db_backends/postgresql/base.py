"""The suite's PostgreSQL backend: Django's, but a flush between transactional tests (the
live servers', the workers', every browser test's) deletes the rows instead of truncating the
tables.

Django empties every table with one `TRUNCATE a, b, …`, which gives each of the ~70 tables new
files on disk: about 0.35 s a test on this machine, against a few milliseconds for `DELETE`
of the handful of rows a test leaves. The foreign keys Django makes on PostgreSQL are
`DEFERRABLE INITIALLY DEFERRED`, and the flush runs in one transaction, so the rows go in any
order. A test that asks for its sequences reset (`reset_sequences`) is flushed by Django's own
`TRUNCATE … RESTART IDENTITY`. The content types and permissions are left as they are
(`tests.db_backends`)."""

from django.db.backends.postgresql import base, operations

from tests.db_backends import flushed


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        tables = flushed(tables)
        if not tables or reset_sequences or allow_cascade:
            return super().sql_flush(
                style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        # one statement string: one round trip for every table
        return [
            " ".join(
                f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};"
                for table in tables
            )
        ]


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
