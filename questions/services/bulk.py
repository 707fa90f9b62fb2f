"""Bulk inserts that cost the batch engine little CPU: rows of one model, given as plain values.

Django's `bulk_create` builds a model instance per row and prepares every value through its
field; on PostgreSQL it then binds each column as one array (`INSERT … SELECT * FROM
UNNEST(…)`), and psycopg quotes those arrays in Python, character by character: for a recorded
call — a few kilobytes of JSON, every quote escaped — that cost more CPU than the call itself.
`insert` takes the rows as {attname: value} and prepares only the values that need it (JSON,
dates, anything but plain text, numbers, booleans and ids). On PostgreSQL it sends them with
COPY (psycopg formats the rows in C), after taking their ids from the table's sequence in one
query when the caller wants them; elsewhere with one multi-row INSERT … RETURNING per chunk.
`update` writes rows back by id in one `executemany` of a plain UPDATE (`bulk_update` builds a
CASE per field and row). A JSON value already encoded (`JSONText`) is written as it is: a
call's answers are encoded once, for its answer rows and its item's answers (`json_object`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db import connections, models, router
from django.utils import timezone

#: fields whose database value is the Python value itself
_PLAIN = (
    models.CharField,
    models.TextField,
    models.IntegerField,
    models.FloatField,
    models.BooleanField,
)


class JSONText(str):
    """A value of JSON's own types already encoded as `json.dumps` encodes it: written to a JSON
    field as it is (any other str is a JSON string, and encoded)."""


def json_text(value: Any) -> JSONText:
    return JSONText(json.dumps(value))


def json_object(members: Mapping[str, str]) -> JSONText:
    """The object of these keys and values, each value already encoded: the text `json.dumps`
    gives the object of the decoded values."""
    return JSONText(
        "{" + ", ".join(f"{json.dumps(key)}: {text}" for key, text in members.items()) + "}"
    )


def insert(
    model: type[models.Model], rows: Sequence[dict[str, Any]], *, ids: bool = True
) -> list[int]:
    """Insert `rows` of `model` — each {field attname: the value the model would hold} — and
    return their ids, in order (none with `ids=False`: the database numbers them, and a
    query is saved); the caller holds the transaction. A field a row leaves out takes its
    default, an `auto_now` or `auto_now_add` field the time now. No signal is sent, as with
    `bulk_create`."""
    if not rows:
        return []
    alias = router.db_for_write(model)
    connection = connections[alias]
    meta = model._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    now = timezone.now()
    values = [_values_of(field, connection, now) for field in fields]
    table, quote = meta.db_table, connection.ops.quote_name
    columns = [quote(f.column) for f in fields]
    with connection.cursor() as cursor:
        numbered: list[int] = []
        if connection.vendor == "postgresql":
            if ids:
                cursor.execute(
                    "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                    [quote(table), meta.pk.column, len(rows)],
                )
                numbered = [pk for (pk,) in cursor.fetchall()]
                columns = [quote(meta.pk.column), *columns]
            with cursor.cursor.copy(
                f"COPY {quote(table)} ({', '.join(columns)}) FROM STDIN"
            ) as copy:
                for n, row in enumerate(rows):
                    first = [numbered[n]] if ids else []
                    copy.write_row([*first, *(value(row) for value in values)])
            return numbered
        one = f"({', '.join(['%s'] * len(fields))})"
        chunk = max(1, connection.features.max_query_params // len(fields))
        returning = f" RETURNING {quote(meta.pk.column)}" if ids else ""
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            cursor.execute(
                f"INSERT INTO {quote(table)} ({', '.join(columns)}) "
                f"VALUES {', '.join([one] * len(part))}{returning}",
                [value(row) for row in part for value in values],
            )
            if ids:
                numbered += [pk for (pk,) in cursor.fetchall()]
        return numbered


def update(model: type[models.Model], attnames: Sequence[str], rows: Sequence[dict[str, Any]]):
    """Write `attnames` of each row — {"id": its id, attname: value, …} — to `model`'s row of
    that id, in one `executemany` of a plain UPDATE; the caller holds the transaction."""
    if not rows:
        return
    alias = router.db_for_write(model)
    connection = connections[alias]
    meta = model._meta
    fields = [next(f for f in meta.concrete_fields if f.attname == a) for a in attnames]
    prepared = [(f.attname, _preparer(f, connection)) for f in fields]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(f.column)} = %s" for f in fields)
    sql = f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s"
    with connection.cursor() as cursor:
        cursor.executemany(
            sql, [[prepare(row[name]) for name, prepare in prepared] + [row["id"]] for row in rows]
        )


def _preparer(field: models.Field, connection) -> Callable[[Any], Any]:
    """How a value of `field` becomes the database's: itself for plain text, numbers, booleans
    and ids; JSON as its text (`JSONText` as it is), None as NULL (what the field's preparing
    ends in: on PostgreSQL through psycopg's JSON adapter, which cost twice the encoding);
    otherwise as the field prepares it (dates…)."""
    if isinstance(field, (*_PLAIN, models.ForeignKey)):
        return lambda value: value
    if isinstance(field, models.JSONField):
        dumps = functools.partial(json.dumps, cls=field.encoder)
        return lambda value: (
            None if value is None else value if type(value) is JSONText else dumps(value)
        )
    return lambda value: field.get_db_prep_save(value, connection)


def _values_of(field: models.Field, connection, now) -> Callable[[dict[str, Any]], Any]:
    """How a row's value of `field` becomes the database's."""
    name, default = field.attname, field.get_default
    prepared = _preparer(field, connection)
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        stamp = field.get_db_prep_save(now, connection)
        return lambda row: stamp if row.get(name) is None else prepared(row[name])
    return lambda row: prepared(row[name] if name in row else default())
