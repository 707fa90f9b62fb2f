"""The audit log as files — CSV (a spreadsheet runs no cell of it as a formula) and JSON Lines —
and the moments its filters take: `7d` or `24h` ago, a day (`2026-12-01`, its start in UTC) or an
ISO date and time."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

from questions.core.state_files import FORMULA_STARTS

#: the columns of the CSV export, in order (the keys of a row as the exports give it)
COLUMNS = (
    "at",
    "user",
    "action",
    "object_type",
    "object_id",
    "object",
    "set",
    "detail",
    "address",
    "via",
)

_AGO = re.compile(r"([0-9]{1,5})([dh])")


def moment(text: str, now: datetime) -> datetime:
    """The moment `text` names: `Nd` / `Nh` before `now`, a day's start (UTC), or an ISO date
    and time (UTC when it names no zone). `ValueError` saying what it takes otherwise."""
    text = text.strip()
    found = _AGO.fullmatch(text)
    if found:
        amount = int(found.group(1))
        return now - (timedelta(days=amount) if found.group(2) == "d" else timedelta(hours=amount))
    try:
        if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
            return datetime.combine(date.fromisoformat(text), datetime.min.time(), tzinfo=UTC)
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{text[:30]!r} is no moment: give 7d, 24h, a day (2026-12-01) or an ISO date and time"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"'{text}" if text[:1] in (*FORMULA_STARTS, "'") else text


def csv_lines(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The header, then one row per entry (`detail` as JSON text)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")

    def line(cells: list[str]) -> str:
        out.seek(0)
        out.truncate()
        writer.writerow(cells)
        return out.getvalue()

    yield line(list(COLUMNS))
    for row in rows:
        yield line([_cell(row.get(column)) for column in COLUMNS])


def jsonl_lines(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n"
