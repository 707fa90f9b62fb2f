"""The editor's per-type question forms: a document ⇄ the fields of the editor page.

A question is a card whose fields are named `q-<card>-…`; a choice option, a score level or a
noul case is a row, `q-<card>-r-<row>-…`. Hidden `q` and `q-<card>-r` inputs list the cards and
rows in page order, so reordering on the page reorders the document.

Nothing is lost or rewritten on the way through: absent and `null` instructions and criteria
are distinct choices on the form; an entry keeps its shape (no description / text / what, not
for and examples / JSON); and every row carries its original entry (and every card its original
instructions) so that what the author did not touch comes back byte-for-byte — `{"what": "x"}`
does not turn into `"x"`. The order the author wrote is kept too: a card carries its question's
key order (`q-<card>-keys`) and a noul's case order (`q-<card>-cases`), and an edited entry keeps
its original keys in their order. An entry the what / not for / examples fields cannot show
exactly (an array, an object with other keys or other values, an example the lines would trim) is
edited as JSON text in its row, parsed with `spec.loads`, its errors at the row.
Textareas send CRLF; it is read back as LF.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.datastructures import MultiValueDict

from questions import editor_fields
from questions.core import spec
from questions.services.errors import Invalid

ENTRY_SHAPES = ("text", "object", "json", "null")  # a noul case may also be "absent"
INSTRUCTION_MODES = ("text", "json", "null", "absent")
NOUL_MODES = ("absent", "null", "empty", "described")


class TamperedField(Invalid):
    """A hidden field holds what the editor never wrote there (it is not JSON, or too deep)."""

    status = 400
    code = "tampered_field"

    def __init__(self, name: str, problem: str):
        self.field = name
        super().__init__(
            f"The hidden field {name} does not hold what the editor wrote ({problem}); reload "
            "the page. Nothing was saved."
        )


def _original(name: str, text: str) -> Any:
    """The JSON a hidden `…orig` field carries back, or `TamperedField` naming the field."""
    try:
        return spec.loads(text)
    except spec.JSONTextError as exc:
        raise TamperedField(name, str(exc)) from None


def new_key() -> str:
    return secrets.token_hex(4)


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass
class Row:
    """An option (with a name), a level, or a noul case (`true` / `false`)."""

    key: str
    name: str = ""
    shape: str = "text"
    what: str = ""
    not_for: str = ""
    examples: str = ""  # one per line
    json: str = ""  # the entry as JSON text (the `json` shape)
    orig: str = ""  # JSON of the entry this row was made from
    #: the posted field `orig` came from, to name it when it is not JSON
    orig_field: str = field(default="orig", compare=False, repr=False)

    @classmethod
    def from_entry(cls, key: str, entry: Any, name: str = "") -> Row:
        row = cls(key=key, name=name)
        if entry is spec.ABSENT:
            row.shape = "absent"
            return row
        row.orig = json.dumps(entry, ensure_ascii=False)
        row.json = json.dumps(entry, ensure_ascii=False, indent=2)
        if entry is None:
            row.shape = "null"
        elif isinstance(entry, str):
            row.shape, row.what = "text", entry
        elif plain_entry(entry):
            row.shape = "object"
            row.what = entry.get("what", "")
            row.not_for = entry.get("not_for", "")
            row.examples = "\n".join(entry.get("examples", ()))
        else:  # a structured description the fields cannot show exactly: its JSON
            row.shape = "json"
        return row

    def entry(self) -> Any:
        """The entry these fields mean; the original one when the fields still show it.
        `EntryNotJSON` when the JSON field holds what is not JSON."""
        original: Any = spec.ABSENT
        if self.orig:
            original = _original(self.orig_field, self.orig)
            if Row.from_entry(self.key, original, self.name).fields() == self.fields():
                return original
        if self.shape == "absent":
            return spec.ABSENT
        if self.shape == "null":
            return None
        if self.shape == "text":
            return self.what
        if self.shape == "json":
            try:
                return spec.loads(self.json)
            except spec.JSONTextError as exc:
                raise EntryNotJSON(str(exc)) from None
        values = {
            "what": self.what,
            "not_for": self.not_for,
            "examples": [line.strip() for line in self.examples.split("\n") if line.strip()],
        }
        # the keys the entry had stay, in their order (also when emptied); new ones follow
        kept = [k for k in original if k in values] if isinstance(original, dict) else []
        order = [*kept, *(k for k in spec.ENTRY_KEYS if k not in kept)]
        return {k: values[k] for k in order if values[k] or k in kept}

    def fields(self) -> tuple:
        """What the form shows: fields hidden by the shape do not count."""
        if self.shape in ("null", "absent"):
            return (self.shape,)
        if self.shape == "text":
            return (self.shape, _lf(self.what))
        if self.shape == "json":
            return (self.shape, _lf(self.json))
        examples = tuple(line.strip() for line in _lf(self.examples).split("\n") if line.strip())
        return (self.shape, _lf(self.what), _lf(self.not_for), examples)


class EntryNotJSON(ValueError):
    """A row's JSON field holds what is not JSON."""


def plain_entry(entry: Any) -> bool:
    """Whether the what / not for / examples fields show object `entry` exactly: the documented
    object (`spec.is_documented_entry`, each key once), with no carriage return in `what` or
    `not_for` and examples that one line each holds as typed (non-blank, no surrounding space).
    Anything else is edited as JSON."""
    if not isinstance(entry, dict) or getattr(entry, "repeated", ()):
        return False
    if not spec.is_documented_entry(entry):
        return False
    if any("\r" in entry.get(k, "") for k in ("what", "not_for")):
        return False
    return all(
        e and e == e.strip() and "\n" not in e and "\r" not in e for e in entry.get("examples", [])
    )


@dataclass
class Card:
    """One question on the editor page."""

    key: str
    id: str = ""
    type: str = "choice"
    instructions_mode: str = "text"
    instructions: str = ""
    instructions_orig: str = ""  # JSON of the instructions the card was made from
    rows: list[Row] = field(default_factory=list)  # options or levels
    noul_mode: str = "absent"
    noul_true: Row = field(default_factory=lambda: Row(key="t", shape="absent"))
    noul_false: Row = field(default_factory=lambda: Row(key="f", shape="absent"))
    #: the order the author gave the question's keys and a noul's cases in (comma-separated;
    #: empty: the usual order); keys not named come after, in the usual order
    keys: str = ""
    cases: str = ""
    #: what JSON cannot hold (instructions that are not JSON, a name used twice)
    errors: list[str] = field(default_factory=list)
    #: (message, row key, code): what JSON cannot hold at one row (an option name used again,
    #: a JSON field that is not JSON)
    row_errors: list[tuple[str, str, str]] = field(default_factory=list)
    #: issues found at this card's fields, for its status badge
    error_count: int = 0
    warning_count: int = 0
    #: a closed card shows its head only; its fields are rendered when it is opened, and until
    #: then it posts only the id it is stored under and stands for that stored question
    closed: bool = False
    stored_id: str = ""
    stored: Any = spec.ABSENT  # the stored question a closed card stands for

    @classmethod
    def from_question(cls, key: str, qid: str, question: Any) -> Card:
        card = cls(key=key, id=qid)
        if not isinstance(question, dict):
            return card
        card.keys = ",".join(k for k in question if k in spec.QUESTION_KEYS)
        qtype = question.get("type")
        card.type = qtype if qtype in spec.QUESTION_TYPES else "choice"
        instructions = question.get("instructions", spec.ABSENT)
        card.instructions_mode, card.instructions = _instructions_fields(instructions)
        if instructions is not spec.ABSENT:
            card.instructions_orig = json.dumps(instructions, ensure_ascii=False)
        criteria = question.get("criteria", spec.ABSENT)
        if card.type == "choice" and isinstance(criteria, dict):
            card.rows = [
                Row.from_entry(f"r{i}", e, name) for i, (name, e) in enumerate(criteria.items())
            ]
        elif card.type == "score" and isinstance(criteria, list):
            card.rows = [Row.from_entry(f"r{i}", e) for i, e in enumerate(criteria)]
        elif card.type == "noul":
            if criteria is spec.ABSENT:
                card.noul_mode = "absent"
            elif criteria is None:
                card.noul_mode = "null"
            elif criteria == {}:
                card.noul_mode = "empty"
            else:
                card.noul_mode = "described"
            if isinstance(criteria, dict):
                card.noul_true = Row.from_entry("t", criteria.get("true", spec.ABSENT))
                card.noul_false = Row.from_entry("f", criteria.get("false", spec.ABSENT))
                card.cases = ",".join(k for k in criteria if k in spec.NOUL_CRITERIA_KEYS)
        return card

    @property
    def case_rows(self) -> list[tuple[str, Row]]:
        """A noul's two cases, in the order the author wrote them."""
        rows = {"true": self.noul_true, "false": self.noul_false}
        return [(name, rows[name]) for name in _ordered(self.cases, spec.NOUL_CRITERIA_KEYS)]

    @classmethod
    def blank(cls, qtype: str = "choice") -> Card:
        card = cls(key=new_key(), type=qtype if qtype in spec.QUESTION_TYPES else "choice")
        if card.type in ("choice", "score"):
            card.rows = [Row(key=new_key()), Row(key=new_key())]
        return card

    def question(self) -> dict[str, Any]:
        """The question these fields mean. Problems that JSON cannot hold (instructions that
        are not JSON, an option name used twice) go to `self.errors`."""
        if self.stored is not spec.ABSENT:  # a closed card: what is stored, exactly
            return self.stored
        self.errors, self.row_errors = [], []
        parts: dict[str, Any] = {"type": self.type}
        instructions = self._instructions()
        if instructions is not spec.ABSENT:
            parts["instructions"] = instructions
        if self.type == "choice":
            criteria: dict[str, Any] = {}
            for row in self.rows:
                if row.name in criteria:  # at the second occurrence, where it was typed
                    self.row_errors.append(
                        (
                            f"choice `{spec.shown_id(self.id)}`: option name "
                            f"`{spec.shown_id(row.name)}` is used twice",
                            row.key,
                            "duplicate_option_name",
                        )
                    )
                    continue
                criteria[row.name] = self._entry(row)
            parts["criteria"] = {k: v for k, v in criteria.items() if v is not spec.ABSENT}
        elif self.type == "score":
            levels = [self._entry(row) for row in self.rows]
            parts["criteria"] = [v for v in levels if v is not spec.ABSENT]
        elif self.noul_mode == "null":
            parts["criteria"] = None
        elif self.noul_mode == "empty":
            parts["criteria"] = {}
        elif self.noul_mode == "described":
            cases = {name: self._entry(row) for name, row in self.case_rows}
            parts["criteria"] = {k: v for k, v in cases.items() if v is not spec.ABSENT}
        return {k: parts[k] for k in _ordered(self.keys, spec.QUESTION_KEYS) if k in parts}

    def _entry(self, row: Row) -> Any:
        """A row's entry; ABSENT, with the problem at the row, when its JSON is not JSON."""
        try:
            return row.entry()
        except EntryNotJSON as exc:
            self.row_errors.append(
                (f"This description is not JSON: {exc}", row.key, "entry_not_json")
            )
            return spec.ABSENT

    def _instructions(self) -> Any:
        if self.instructions_orig:
            original = _original(f"q-{self.key}-instructions_orig", self.instructions_orig)
            mode, text = _instructions_fields(original)
            if (mode, _lf(text)) == (self.instructions_mode, _lf(self.instructions)):
                return original
        if self.instructions_mode == "text":
            return self.instructions
        if self.instructions_mode == "null":
            return None
        if self.instructions_mode == "json":
            try:
                return spec.loads(self.instructions)
            except spec.JSONTextError as exc:
                self.errors.append(f"The structured instructions are not JSON: {exc}")
        return spec.ABSENT

    @property
    def row_count(self) -> int:
        """Its options or levels: those on the page, or those of the stored question."""
        if self.rows or not isinstance(self.stored, dict):
            return len(self.rows)
        criteria = self.stored.get("criteria")
        return len(criteria) if isinstance(criteria, dict | list) else 0

    def row_for(self, key: str | int) -> Row | None:
        """The row an issue location names: an option name, a level index or true/false."""
        if self.type == "choice":
            return next((r for r in self.rows if r.name == key), None)
        if self.type == "score" and isinstance(key, int) and 0 <= key < len(self.rows):
            return self.rows[key]
        if self.type == "noul":
            return {"true": self.noul_true, "false": self.noul_false}.get(key)
        return None


def _ordered(written: str, usual: tuple[str, ...]) -> list[str]:
    """The names of `usual` in the order `written` (comma-separated) gives, then the rest."""
    first = [name for name in dict.fromkeys(written.split(",")) if name in usual]
    return [*first, *(name for name in usual if name not in first)]


def _instructions_fields(instructions: Any) -> tuple[str, str]:
    """The (mode, text) the form shows for instructions."""
    if instructions is spec.ABSENT:
        return "absent", ""
    if instructions is None:
        return "null", ""
    if isinstance(instructions, str):
        return "text", instructions
    return "json", json.dumps(instructions, ensure_ascii=False, indent=2)


def cards_from_document(document: Mapping[str, Any], *, open_rows: int | None = None) -> list[Card]:
    """The cards of a document; with `open_rows`, a choice or score with more rows than that
    is a closed card, standing for its stored question, its rows not built."""
    cards = []
    for i, (qid, question) in enumerate(document.items()):
        criteria = question.get("criteria") if isinstance(question, dict) else None
        if (
            open_rows is not None
            and isinstance(question, dict)
            and question.get("type") in ("choice", "score")
            and isinstance(criteria, dict | list)
            and len(criteria) > open_rows
        ):
            card = Card(key=f"k{i}", id=qid, type=question["type"], closed=True, stored_id=qid)
            card.instructions_mode, card.instructions = _instructions_fields(
                question.get("instructions", spec.ABSENT)
            )
            card.stored = question
        else:
            card = Card.from_question(f"k{i}", qid, question)
        cards.append(card)
    return cards


#: the posted fields whose text is read back with LF line ends (textareas send CRLF)
_TEXTS = frozenset({"what", "not_for", "examples", "json", "instructions"})


def _posted(data: MultiValueDict, prefix: str, names: tuple[str, ...]) -> dict[str, str]:
    """The fields `prefix` + name of `names` (`questions.editor_fields`), "" when not posted."""
    return {
        name: _lf(data.get(prefix + name, "")) if name in _TEXTS else data.get(prefix + name, "")
        for name in names
    }


def _row_from_post(data: MultiValueDict, prefix: str, key: str) -> Row:
    p = f"{prefix}-r-{key}-"
    fields = _posted(data, p, editor_fields.ROW_FIELDS)
    if fields["shape"] not in (*ENTRY_SHAPES, "absent"):
        fields["shape"] = "text"
    return Row(key=key, **fields, orig_field=p + "orig")


def card_from_post(data: MultiValueDict, key: str) -> Card:
    """One card from the posted fields (a QueryDict); a closed card is its stored id only,
    until `fill_closed` gives it the stored question."""
    prefix = f"q-{key}"
    stored_id = _posted(data, f"{prefix}-", editor_fields.CLOSED_FIELDS)["stored"]
    if stored_id:
        return Card(key=key, id=stored_id, closed=True, stored_id=stored_id)
    fields = _posted(data, f"{prefix}-", editor_fields.CARD_FIELDS + editor_fields.NOUL_FIELDS)
    if fields["type"] not in spec.QUESTION_TYPES:
        fields["type"] = "choice"
    if fields["instructions_mode"] not in INSTRUCTION_MODES:
        fields["instructions_mode"] = "text"
    if fields["noul_mode"] not in NOUL_MODES:
        fields["noul_mode"] = "absent"
    card = Card(key=key, **fields)
    if card.type == "noul":
        card.noul_true = _row_from_post(data, prefix, "t")
        card.noul_false = _row_from_post(data, prefix, "f")
    else:
        card.rows = [_row_from_post(data, prefix, row) for row in data.getlist(f"{prefix}-r")]
    return card


def cards_from_post(data: MultiValueDict) -> list[Card]:
    return [card_from_post(data, key) for key in data.getlist("q")]


#: a card with more rows than this is closed on the editor page until it is opened (a 32 x 255
#: document would be 16 MB of fields); smaller cards are open
OPEN_ROWS = 40


def fill_closed(cards: list[Card], stored: Callable[[], Mapping[str, Any]]) -> None:
    """Give each posted closed card the stored question it stands for (`stored()` is the saved
    document, read only when a closed card was posted)."""
    closed = [card for card in cards if card.closed]
    if not closed:
        return
    document = stored()
    for card in closed:
        if card.stored_id not in document:
            card.errors.append(
                f"Question `{card.stored_id}` was never opened on this page and is no longer in "
                "the saved draft: reload the page."
            )
            card.stored = {}
            continue
        filled = Card.from_question(card.key, card.stored_id, document[card.stored_id])
        filled.closed, filled.stored_id = True, card.stored_id
        filled.stored = document[card.stored_id]
        vars(card).update(vars(filled))


@dataclass
class EditorDocument:
    """The document the page's cards mean; what JSON could not hold stays on the cards."""

    cards: list[Card]
    document: dict[str, Any]

    @property
    def representable(self) -> bool:
        return not any(
            card.errors or any(code in UNREPRESENTABLE for *_, code in card.row_errors)
            for card in self.cards
        )


#: what a row may hold that no JSON document can: a description that is not JSON, and an
#: option name used twice (an object keeps one of them) — saving would lose what was typed
UNREPRESENTABLE = frozenset({"entry_not_json", "duplicate_option_name"})


DUPLICATE_ID = "Question id `{}` is used by another question."


def document_from_cards(cards: list[Card]) -> EditorDocument:
    document: dict[str, Any] = {}
    for card in cards:
        question = card.question()
        if card.id in document:
            card.errors.append(DUPLICATE_ID.format(card.id))
            continue
        document[card.id] = question
    return EditorDocument(cards, document)


# --- placing issues at their fields --------------------------------------------------------------


def slot_id(card: str, part: str, row: str | None = None) -> str:
    return f"slot-{card}-row-{row}" if row is not None else f"slot-{card}-{part}"


def place_issues(cards: list[Card], issues: list[spec.Issue]) -> dict[str, list[spec.Issue]]:
    """Each issue under the slot of the field it names; the document's own under `document`."""
    by_id: dict[str, Card] = {}
    for card in cards:
        by_id.setdefault(card.id, card)
    placed: dict[str, list[spec.Issue]] = {}
    for issue in issues:
        placed.setdefault(_slot_for(by_id, issue.loc), []).append(issue)
    return placed


def _slot_for(by_id: dict[str, Card], loc: tuple) -> str:
    if len(loc) < 2 or loc[0] != "questions" or loc[1] not in by_id:
        return "slot-document"
    card = by_id[loc[1]]
    if len(loc) == 2:
        return slot_id(card.key, "id")
    part = loc[2]
    if part in ("type", "instructions"):
        return slot_id(card.key, part)
    if part == "row" and len(loc) > 3:  # a row by its key (`Card.row_errors`)
        return slot_id(card.key, "row", loc[3])
    if part == "criteria":
        if len(loc) > 3:
            row = card.row_for(loc[3])
            if row is not None:
                return slot_id(card.key, "row", row.key)
        return slot_id(card.key, "criteria")
    return slot_id(card.key, "card")
