"""The fields the editor page posts, by name, and the most fields one of its posts carries.

An open card posts `q` (its key, in page order) and `q-<card>-<name>` for each of
`CARD_FIELDS`; a choice or a score posts per row `q-<card>-r` (the row's key, in row order) and
`q-<card>-r-<row>-<name>` for each of `ROW_FIELDS`; a noul posts `NOUL_FIELDS` and, for each of
its two cases, `CASE_FIELDS`. A closed card posts `q` and `CLOSED_FIELDS`. `questions.forms`
reads the posted cards by these names; the settings let a request carry `most_fields` fields
(`DATA_UPLOAD_MAX_NUMBER_FIELDS`), so that saving, previewing or trying the largest set the
limits allow, every card open, is never refused as too many fields (Django answers 400 to the
whole body). Pure Python: the settings import it before Django is set up.
"""

from __future__ import annotations

from typing import Final, Protocol

CARD_FIELDS: Final = (
    "keys",
    "id",
    "type",
    "instructions_orig",
    "instructions_mode",
    "instructions",
)
ROW_FIELDS: Final = ("orig", "name", "shape", "what", "not_for", "examples", "json")
NOUL_FIELDS: Final = ("noul_mode", "cases")
#: a case posts no shape of its own: the noul's one control (`noul_mode`) carries both cases' shapes
CASE_FIELDS: Final = ("orig", "what", "not_for", "examples", "json")
CLOSED_FIELDS: Final = ("id", "stored")
#: what a post carries beside its cards, at most: the save's CSRF token, base revision and
#: overwrite button; the try's four fields and the base revision; the preview's three
PAGE_FIELDS: Final = 8


class _Limits(Protocol):
    max_questions: int
    max_options: int
    max_levels: int


def card_fields(rows: int) -> int:
    """The fields an open choice or score card of `rows` rows posts."""
    return 1 + len(CARD_FIELDS) + rows * (1 + len(ROW_FIELDS))


def noul_card_fields() -> int:
    """The fields an open noul card posts."""
    return 1 + len(CARD_FIELDS) + len(NOUL_FIELDS) + 2 * len(CASE_FIELDS)


def most_fields(limits: _Limits) -> int:
    """The most fields an editor post carries under `limits`: every card open, one question and
    one row past the limits (an author who adds one too many sees the limit's message, not a
    refused body), and the page's own fields."""
    rows = max(limits.max_options, limits.max_levels) + 1
    largest = max(card_fields(rows), noul_card_fields())
    return (limits.max_questions + 1) * largest + PAGE_FIELDS
