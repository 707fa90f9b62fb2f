"""Who fetched what: the export fetch log (`ExportFetch`), written from the runtime's hot path.

Every fetch of the export API by a token is counted in one row per token, set, label and minute
(an upsert), so a runtime that polls does not grow the table faster than one row a minute per
label it polls. The write must cost the fetch nothing it can notice: each process counts its
fetches in memory and writes them in one go when

- a fetch is the first this process has seen of its token and label, or serves another version
  or ETag than the last one written for them (so the set page learns of a new poller or of a
  moved label at once), or
- `FLUSH_EVERY` has passed since the process last wrote.

Between those a fetch costs a dictionary update under a lock. The price: the count and the time
of the last few seconds' fetches are written late (at the process's next write, or when it
exits), and lost if the process is killed. A write that fails is logged and dropped; it never
fails the fetch.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime

from django.db import DatabaseError, connection
from django.utils import timezone

from questions.models import ExportFetch

logger = logging.getLogger(__name__)

#: a process that is being fetched from writes what it counted at least this often (seconds)
FLUSH_EVERY = 10.0

Key = tuple[int, int, str, datetime]  # token id, set id, label ("" for ?version=N), minute


@dataclass
class _Counted:
    fetches: int
    at: datetime
    version_id: int
    etag: str
    status: int


_LOCK = threading.Lock()
_PENDING: dict[Key, _Counted] = {}
#: per token, set and label: the version and ETag served, as this process last wrote them
_WRITTEN: dict[tuple[int, int, str], tuple[int, str]] = {}
_last_write = time.monotonic()


def minute_of(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def export_fetch_record(
    *,
    token_id: int,
    set_id: int,
    label: str | None,
    version_id: int,
    etag: str,
    status: int,
    now: datetime | None = None,
) -> None:
    """Count one fetch of an export by a token (never raises: the fetch is served regardless)."""
    global _last_write
    now = now or timezone.now()
    label = label or ""
    served = (version_id, etag, status)
    key = (token_id, set_id, label, minute_of(now))
    with _LOCK:
        counted = _PENDING.get(key)
        if counted is None:
            _PENDING[key] = _Counted(1, now, *served)
        else:
            counted.fetches += 1
            if now >= counted.at:
                counted.at, counted.version_id, counted.etag, counted.status = now, *served
        due = (
            _WRITTEN.get(key[:3]) != (version_id, etag)
            or time.monotonic() - _last_write >= FLUSH_EVERY
        )
        if not due:
            return
        batch = dict(_PENDING)
        _PENDING.clear()
        for (token, qset, name, _minute), c in sorted(batch.items(), key=lambda kc: kc[1].at):
            _WRITTEN[(token, qset, name)] = (c.version_id, c.etag)
        _last_write = time.monotonic()
    _write(batch)


def export_fetches_flush() -> None:
    """Write every fetch this process has counted and not written yet."""
    global _last_write
    with _LOCK:
        batch = dict(_PENDING)
        _PENDING.clear()
        _last_write = time.monotonic()
    if batch:
        _write(batch)


def export_fetches_forget() -> None:
    """Drop what this process counted and remembers writing (a test starts from nothing)."""
    with _LOCK:
        _PENDING.clear()
        _WRITTEN.clear()


def _write(batch: dict[Key, _Counted]) -> None:
    """One upsert per row, in autocommit as the fetch runs: the count added, the latest
    fetch's time and what it was served kept (another process may have written a later one
    already). One plain statement, as on the rest of the hot path (`exports.export_ref`);
    table and column names from the model."""
    q = connection.ops.quote_name
    table = q(ExportFetch._meta.db_table)

    def column(field: str) -> str:
        return q(ExportFetch._meta.get_field(field).column)

    keys = [column(f) for f in ("token", "question_set", "label", "minute")]
    kept = [column(f) for f in ("last_fetched_at", "version", "etag", "status")]
    fetches, at = column("fetches"), column("last_fetched_at")
    newer = f"excluded.{at} >= {table}.{at}"
    sql = (
        f"INSERT INTO {table} ({', '.join(keys + kept)}, {fetches}) "
        f"VALUES ({', '.join(['%s'] * (len(keys) + len(kept) + 1))}) "
        f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET "
        f"{fetches} = {table}.{fetches} + excluded.{fetches}, "
        + ", ".join(
            f"{c} = CASE WHEN {newer} THEN excluded.{c} ELSE {table}.{c} END"
            for c in kept  # every right-hand side reads the row as it was
        )
    )
    adapt = connection.ops.adapt_datetimefield_value
    rows = [
        [token, qset, label, adapt(minute), adapt(c.at), c.version_id, c.etag, c.status, c.fetches]
        for (token, qset, label, minute), c in batch.items()
    ]
    for row in rows:  # a handful (tokens × labels polled); one whose set or token is gone
        try:  # since it was counted fails alone, and so does a lost connection
            with connection.cursor() as cursor:
                cursor.execute(sql, row)
        except DatabaseError:
            logger.warning("export fetch log: a row was not written", exc_info=True)


def _flush_at_exit() -> None:
    with contextlib.suppress(Exception):  # at exit the database may be gone: nothing to do then
        export_fetches_flush()


atexit.register(_flush_at_exit)
