"""Whole numbers as a person or a request writes them (pure Python): the one reader of digits
the views, the services and the comparison share, so `"²"` — a digit to `str.isdigit` — is
never taken for one."""

from __future__ import annotations


def whole_number(raw: str, *, digits: int = 18) -> int | None:
    """A whole number written in ASCII digits (at most `digits` of them, so it fits the
    database's integers), or None. `"²"` and `"١"` are digits to Python, never here."""
    if isinstance(raw, str) and raw.isascii() and raw.isdigit() and len(raw) <= digits:
        return int(raw)
    return None
