"""The one reader of a whole number a person typed (a form field, a query parameter, a CLI
flag): pure Python, so services and views read digits alike."""


def whole_number(raw: str, *, digits: int = 18) -> int | None:
    """A whole number a request names in ASCII digits (at most `digits` of them, so it fits the
    database's integers), or None. `"²"` and `"١"` are digits to Python, never to a request."""
    if raw.isascii() and raw.isdigit() and len(raw) <= digits:
        return int(raw)
    return None
