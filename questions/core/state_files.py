"""Sample states as files a spreadsheet or a script writes and reads (pure Python, no Django):
CSV with a header row, or JSON Lines (a JSON array is read too).

One record shape, the one `questions states-import` takes: `name`, `state`, optional
`expected` (question id → option name, level number or true/false) and `tags`. In CSV, `state`
and `expected` are JSON text in their columns and `tags` is a comma-separated list (or a JSON
array); a blank `expected` or `tags` cell is none. Each record read keeps the line it starts on,
so a refusal can name it.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from questions.core import spec

CSV, JSONL = "csv", "jsonl"
FORMATS = (CSV, JSONL)
MEDIA_TYPES = {CSV: "text/csv", JSONL: "application/x-ndjson"}
#: the columns of a CSV file, in the order an export writes them
COLUMNS = ("name", "state", "expected", "tags")
REQUIRED_COLUMNS = ("name", "state")
#: the file name endings read as JSON Lines (anything else that starts with `{` or `[` too)
JSON_ENDINGS = (".jsonl", ".ndjson", ".json")


class FileError(ValueError):
    """The file cannot be read as sample states; the message names the line."""


@dataclass(frozen=True)
class Row:
    """One record of a file and the line it starts on (in a JSON array: its place in it)."""

    line: int
    item: Any
    index: int | None = None

    @property
    def where(self) -> str:
        """How a refusal names the record: "line 7", or "item 3" of a JSON array."""
        return f"line {self.line}" if self.index is None else f"item {self.index}"


#: a cell a spreadsheet would run as a formula starts with one of these; an export writes such
#: a name or tag behind a `'`, which the import takes off again
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _unguarded(text: str) -> str:
    return text[1:] if text[:1] == "'" and text[1:2] in (*FORMULA_STARTS, "'") else text


def _guarded(text: str) -> str:
    return f"'{text}" if text[:1] in (*FORMULA_STARTS, "'") else text


def format_of(filename: str, data: bytes) -> str:
    """CSV or JSONL: by the file's ending, else by its first character (`{` or `[`: JSON)."""
    lower = (filename or "").lower()
    if lower.endswith(".csv"):
        return CSV
    if lower.endswith(JSON_ENDINGS):
        return JSONL
    start = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    return JSONL if start in (b"{", b"[") else CSV


class TooManyRecords(FileError):
    """The file holds more records than one file may (the reader stopped at the first extra)."""


def too_many(limit: int) -> str:
    """What a refusal of a file over `limit` records says: the limit and how to load more."""
    return (
        f"more than {limit:,} records, the most one file may hold (DECISIONS__UPLOAD_MAX_ROWS); "
        f"split it into several files of at most {limit:,} records, or have an operator import "
        "it with `manage.py questions states-import` and DECISIONS__UPLOAD_MAX_ROWS raised for "
        "that one command"
    )


#: what a spreadsheet's own files start with (a zip: .xlsx, .ods; OLE2: .xls)
SPREADSHEET_MAGIC = (b"PK\x03\x04", b"\xd0\xcf\x11\xe0")
#: the line breaks a CSV file may use (as `newline=""` reads them: \r\n, \n or a lone \r)
_BREAKS = re.compile(r"(?<=\r)(?!\n)|(?<=\n)")


class Source(Protocol):
    def readline(self, size: int = -1, /) -> bytes: ...


def _lines(source: Source) -> Iterator[str]:
    """The text lines of a UTF-8 file, read and decoded one at a time (a spreadsheet's byte-order
    mark is no character); a byte that is not UTF-8 is refused naming its line."""
    for number, raw in enumerate(iter(source.readline, b""), 1):
        try:  # a line break is one byte that no other UTF-8 character holds
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            raise FileError(f"line {number}: not UTF-8 text (save the file as UTF-8)") from None
        yield from (piece for piece in _BREAKS.split(text) if piece)


class _Chained:
    """The lines already read, then the rest of the file."""

    def __init__(self, head: list[bytes], rest: Source):
        self.head, self.rest = list(head), rest

    def readline(self, size: int = -1, /) -> bytes:
        return self.head.pop(0) if self.head else self.rest.readline()


def read(
    source: bytes | Source, *, filename: str = "", max_records: int | None = None
) -> list[Row]:
    """The records of a CSV or JSON Lines file (its bytes, or a binary file read line by line),
    or `FileError` naming the first bad line. With `max_records`, a file holding more is refused
    (`TooManyRecords`) when the first record past the limit is read: the rest of the file is
    neither read nor parsed."""
    stream = io.BytesIO(source) if isinstance(source, bytes | bytearray) else source
    head: list[bytes] = []
    for raw in iter(stream.readline, b""):  # up to the first line that is not blank
        head.append(raw)
        if raw.strip(b"\xef\xbb\xbf \t\r\n"):
            break
    start = b"".join(head)
    if start.startswith(SPREADSHEET_MAGIC):
        raise FileError(
            "line 1: this is a spreadsheet's own file, not CSV; save it as CSV (UTF-8) and "
            "upload that"
        )
    lines = _lines(_Chained(head, stream))
    rows = _csv_rows(lines) if format_of(filename, start) == CSV else _jsonl_rows(lines)
    kept = []
    for row in rows:
        if len(kept) == max_records:
            raise TooManyRecords(f"{row.where}: {too_many(max_records)}")
        kept.append(row)
    return kept


def read_jsonl(text: str) -> list[Row]:
    """JSON Lines (one value per non-blank line), or one JSON array of records (each record's
    line is then the array's first)."""
    return list(_jsonl_rows(iter(text.splitlines(keepends=True))))


def _jsonl_rows(lines: Iterator[str]) -> Iterator[Row]:
    number, first = 0, True
    for line in lines:
        number += 1
        if not line.strip():
            continue
        if first and line.lstrip().startswith("["):  # one JSON array of records, read whole
            text = line + "".join(lines)
            try:
                value = spec.loads(text)
            except spec.JSONTextError as exc:
                raise FileError(f"line {number}: not a JSON array: {exc}") from None
            if not isinstance(value, list):
                raise FileError(f"line {number}: not a JSON array")
            yield from (Row(number, item, i) for i, item in enumerate(value, 1))
            return
        first = False
        try:
            yield Row(number, spec.loads(line))
        except spec.JSONTextError as exc:
            raise FileError(f"line {number}: not JSON: {exc}") from None


def _json_cell(raw: str, column: str, line: int) -> Any:
    try:
        return spec.loads(raw)
    except spec.JSONTextError as exc:
        hint = ' (a text is written in quotes: "hello")' if column == "state" else ""
        raise FileError(f"line {line}: the {column} column is not JSON{hint}: {exc}") from None


def _tags_cell(raw: str, line: int) -> list[Any]:
    if raw.lstrip().startswith("["):
        value = _json_cell(raw, "tags", line)
        if not isinstance(value, list):
            raise FileError(f"line {line}: the tags column must be a list")
        return value
    return [_unguarded(t.strip()) for t in raw.split(",") if t.strip()]


def read_csv(text: str) -> list[Row]:
    """A CSV file with a header row naming its columns (`name`, `state`, and optionally
    `expected` and `tags`, in any order)."""
    return list(_csv_rows(iter(io.StringIO(text, newline=""))))


def _csv_rows(lines: Iterator[str]) -> Iterator[Row]:
    reader = csv.reader(lines, strict=True)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise FileError(f"line 1: not CSV: {exc}") from None
    if header is None:
        return
    header = [h.strip() for h in header]
    unknown = [h for h in header if h not in COLUMNS]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if unknown or missing:
        said = []
        if missing:
            said.append(f"no {' or '.join(missing)} column")
        if unknown:
            said.append(f"unknown column(s) {', '.join(repr(u[:40]) for u in unknown)}")
        raise FileError(
            f"line 1: {'; '.join(said)}; the header row names {', '.join(COLUMNS)} "
            "(expected and tags may be left out)"
        )
    if len(set(header)) != len(header):
        raise FileError("line 1: a column is named twice")
    end = reader.line_num
    while True:
        start = end + 1
        try:
            cells = next(reader, None)
        except csv.Error as exc:
            raise FileError(f"line {start}: not CSV: {exc}") from None
        end = reader.line_num
        if cells is None:
            break
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            raise FileError(
                f"line {start}: {len(cells)} cells, but the header names {len(header)} columns"
            )
        cell = dict(zip(header, cells, strict=True))
        if not cell["state"].strip():
            raise FileError(
                f"line {start}: the state column is empty (null is a state: write null)"
            )
        item: dict[str, Any] = {
            "name": _unguarded(cell["name"]),
            "state": _json_cell(cell["state"], "state", start),
        }
        if cell.get("expected", "").strip():
            item["expected"] = _json_cell(cell["expected"], "expected", start)
        if cell.get("tags", "").strip():
            item["tags"] = _tags_cell(cell["tags"], start)
        yield Row(start, item)


# --- writing ---------------------------------------------------------------------------------


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def record(name: str, state: Any, expected: dict[str, Any], tags: list[str]) -> dict[str, Any]:
    """One state as a record of the import's shape."""
    return {"name": name, "state": state, "expected": dict(expected), "tags": list(tags)}


def jsonl_lines(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """One JSON line per record."""
    for r in records:
        yield _json(r) + "\n"


def csv_lines(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The header row, then one row per record (state and expected as JSON text; tags
    comma-separated, or a JSON array when a tag holds a comma)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")

    def line(cells: list[str]) -> str:
        out.seek(0)
        out.truncate()
        writer.writerow(cells)
        return out.getvalue()

    yield line(list(COLUMNS))
    for r in records:
        tags = r.get("tags") or []
        shown = _json(tags) if any("," in t for t in tags) else ", ".join(map(_guarded, tags))
        expected = r.get("expected") or {}
        cells = [_guarded(r["name"]), _json(r["state"]), _json(expected) if expected else "", shown]
        yield line(cells)
