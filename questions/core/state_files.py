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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

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


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")  # a spreadsheet's byte-order mark is no character
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FileError(f"line {line}: not UTF-8 text (save the file as UTF-8)") from None


#: what a spreadsheet's own files start with (a zip: .xlsx, .ods; OLE2: .xls)
SPREADSHEET_MAGIC = (b"PK\x03\x04", b"\xd0\xcf\x11\xe0")


def read(data: bytes, *, filename: str = "") -> list[Row]:
    """The records of a CSV or JSON Lines file, or `FileError` naming the first bad line."""
    if data.startswith(SPREADSHEET_MAGIC):
        raise FileError(
            "line 1: this is a spreadsheet's own file, not CSV; save it as CSV (UTF-8) and "
            "upload that"
        )
    if format_of(filename, data) == CSV:
        return read_csv(_text(data))
    return read_jsonl(_text(data))


def read_jsonl(text: str) -> list[Row]:
    """JSON Lines (one value per non-blank line), or one JSON array of records (each record's
    line is then the array's first)."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        first = text[: len(text) - len(stripped)].count("\n") + 1
        try:
            value = spec.loads(text)
        except spec.JSONTextError as exc:
            raise FileError(f"line {first}: not a JSON array: {exc}") from None
        if isinstance(value, list):
            return [Row(first, item, i) for i, item in enumerate(value, 1)]
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(Row(number, spec.loads(line)))
        except spec.JSONTextError as exc:
            raise FileError(f"line {number}: not JSON: {exc}") from None
    return rows


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
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise FileError(f"line 1: not CSV: {exc}") from None
    if header is None:
        return []
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
    rows = []
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
        rows.append(Row(start, item))
    return rows


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
