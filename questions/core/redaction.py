"""What a production state loses before it is stored (pure Python, no Django): the paths a set
drops, the patterns it masks, and the built-ins — e-mail addresses, phone numbers, payment card
numbers (Luhn-checked) and IBANs (mod-97-checked) — on by default.

`redact(value, rules)` walks a JSON value and returns a redacted copy and whether anything was
taken out: a dropped path's key is removed; every string (object keys too) has each match of a
mask replaced by `[masked]` and each built-in's match by its name in brackets (`[email]`,
`[phone]`, `[card]`, `[iban]`); a JSON number (whole, or with a zero fraction) that is a
Luhn-valid card number of 13 to 19 digits becomes the string `[card]`; a key that a redaction
makes equal to one the object has already is numbered (`[email] (2)`), so no value is lost.
Nothing here keeps, returns or reports a value it replaced.

A path is keys joined by dots (`customer.email`); `*` stands for any key, a number for that
place of an array, and an array on the way is walked through when the path names no place in
it (`orders.card` drops the card of every order), as the state-path lint reads a path.

The built-ins trade recall for precision where a state is full of numbers: a phone number is
one written with a leading `+` and 8 to 15 digits (a bare run of digits is an order number as
often as a phone number), a card number must pass the Luhn check and an IBAN the mod-97 check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from questions.core.numbers import whole_number

EMAIL, PHONE, CARD, IBAN = "email", "phone", "card", "iban"
#: the built-ins, in the order they apply (a card's digits would read as a phone number's)
BUILTINS: Final = (IBAN, CARD, EMAIL, PHONE)
MASKED: Final = "[masked]"

#: at most this many drop paths and mask patterns a set, each at most this long
MOST_RULES: Final = 50
RULE_LIMIT: Final = 200

_EMAIL = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
# 13 to 19 digits, single spaces or dashes between groups allowed, not inside a longer number;
# after a comma or full stop `_card` tells a list of cards from a number's fraction
_CARD = re.compile(r"(?<!\d)\d(?:[ -]?\d){12,18}(?!\d)")
_DIGITS_BEFORE = re.compile(r"\d+$")
# two letters, two check digits, 11 to 30 letters or digits, in groups of four or not; in
# either case, as people type them (the mod-97 check reads letters in any case)
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]){11,30}(?![A-Za-z0-9])")
# a leading +, then 8 to 15 digits with spaces, dots, dashes or a bracketed area code between
_PHONE = re.compile(r"(?<![\w+])\+\d(?:[ .-]?\(?\d\)?){7,14}(?!\d)")


class RuleError(ValueError):
    """A drop path or mask pattern that cannot be used; the message says why."""


def luhn(digits: str) -> bool:
    """Whether a string of digits passes the Luhn check (every card number does)."""
    total = 0
    for place, char in enumerate(reversed(digits)):
        d = ord(char) - 48
        if place % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_valid(text: str) -> bool:
    """Whether an IBAN (spaces allowed) passes the ISO 13616 mod-97 check."""
    compact = text.replace(" ", "")
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return int(number) % 97 == 1


def _fraction(match: re.Match[str]) -> bool:
    """Whether the digits matched follow a short number's decimal point or comma ("3.4111…"):
    a fraction. After a number as long as a card ("4111…,4012…") they are the list's next."""
    before = match.string[: match.start()]
    if not before or before[-1] not in ".,":
        return False
    run = _DIGITS_BEFORE.search(before[:-1])
    return run is not None and len(run.group()) < 13


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"[ -]", "", match.group())
    return f"[{CARD}]" if luhn(digits) and not _fraction(match) else match.group()


def _iban(match: re.Match[str]) -> str:
    """The longest start of the match, ending at a group's end, that passes the mod-97 check
    replaced by `[iban]` ("GB82 WEST 1234 5698 7654 32 today": the word after is no part of
    it); the match as it was when none does."""
    text = match.group()
    ends = [i for i in range(len(text), 0, -1) if i == len(text) or text[i] == " "]
    for end in ends:
        head = text[:end]
        if len(head.replace(" ", "")) >= 15 and iban_valid(head):
            return f"[{IBAN}]{text[end:]}"
    return text


_REPLACE: Final = {
    IBAN: (_IBAN, _iban),
    CARD: (_CARD, _card),
    EMAIL: (_EMAIL, f"[{EMAIL}]"),
    PHONE: (_PHONE, f"[{PHONE}]"),
}
#: a string none of whose characters is one of these holds no built-in's match
_CANDIDATE: Final = re.compile(r"[@+]|\d{2}")


Path = tuple[str, ...]


@dataclass(frozen=True)
class Rules:
    """A set's redaction: the paths it drops, the patterns it masks, the built-ins it applies."""

    drop: tuple[Path, ...] = ()
    masks: tuple[re.Pattern[str], ...] = ()
    builtins: tuple[str, ...] = BUILTINS

    @property
    def empty(self) -> bool:
        return not (self.drop or self.masks or self.builtins)


def parse_path(text: str) -> Path:
    """A drop path's keys, or `RuleError` saying why it is no path."""
    if not text or not text.strip():
        raise RuleError("a drop path is empty")
    if len(text) > RULE_LIMIT:
        raise RuleError(f"a drop path has {len(text)} characters; at most {RULE_LIMIT}")
    keys = tuple(text.strip().split("."))
    if any(k == "" for k in keys):
        raise RuleError(
            f"the drop path {text[:60]!r} has an empty key (two dots, or one at an end)"
        )
    return keys


def compile_mask(text: str) -> re.Pattern[str]:
    """A mask pattern compiled, or `RuleError` saying why it cannot be used."""
    if not text:
        raise RuleError("a mask pattern is empty")
    if len(text) > RULE_LIMIT:
        raise RuleError(f"a mask pattern has {len(text)} characters; at most {RULE_LIMIT}")
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise RuleError(
            f"the mask pattern {text[:60]!r} is not a regular expression: {exc}"
        ) from None
    if pattern.search(""):
        raise RuleError(f"the mask pattern {text[:60]!r} matches the empty text")
    return pattern


def rules(
    *, drop: Iterable[str] = (), mask: Iterable[str] = (), builtins: Iterable[str] = BUILTINS
) -> Rules:
    """The rules of a set's settings, checked: `RuleError` names the first that cannot work."""
    drop, mask, chosen = list(drop), list(mask), list(builtins)
    for what, given in (("drop paths", drop), ("mask patterns", mask)):
        if len(given) > MOST_RULES:
            raise RuleError(f"{len(given)} {what}; at most {MOST_RULES}")
    unknown = [b for b in chosen if b not in BUILTINS]
    if unknown:
        raise RuleError(
            f"no built-in called {unknown[0][:40]!r}; the built-ins are {', '.join(BUILTINS)}"
        )
    return Rules(
        drop=tuple(parse_path(p) for p in drop),
        masks=tuple(compile_mask(m) for m in mask),
        builtins=tuple(b for b in BUILTINS if b in chosen),
    )


class _Walk:
    """One value's redaction; `changed` says whether anything was taken out."""

    def __init__(self, rules: Rules):
        self.rules = rules
        self.changed = False
        self.replacers = [_REPLACE[b] for b in rules.builtins]

    def text(self, value: str) -> str:
        out = value
        for pattern in self.rules.masks:
            out = pattern.sub(MASKED, out)
        if self.replacers and _CANDIDATE.search(out):
            for pattern, replacement in self.replacers:
                out = pattern.sub(replacement, out)
        if out != value:
            self.changed = True
        return out

    def number(self, value: int | float) -> Any:
        """A card number sent as a JSON number — whole, or with a zero fraction
        (`4111111111111111.0`) — becomes `[card]`; every other number stays."""
        if isinstance(value, float):
            if not value.is_integer():
                return value
            whole = int(value)
        else:
            whole = value
        if CARD in self.rules.builtins and 10**12 <= abs(whole) < 10**19 and luhn(str(abs(whole))):
            self.changed = True
            return f"[{CARD}]"
        return value

    def key(self, key: str, taken: dict[str, Any]) -> str:
        """An object's key redacted; when it now reads as a key the object has already
        (`{"a@x.com": 1, "b@y.com": 2}`), numbered so that no value is lost: `[email] (2)`."""
        out = self.text(key)
        if out not in taken:
            return out
        place = 2
        while f"{out} ({place})" in taken:
            place += 1
        return f"{out} ({place})"

    def value(self, value: Any, paths: list[Path]) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int | float):
            return self.number(value)
        if isinstance(value, list):
            return [
                self.value(item, _within(paths, str(i), array=True)) for i, item in enumerate(value)
            ]
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                under = _within(paths, key, array=False)
                if () in under:
                    self.changed = True
                    continue
                out[self.key(key, out)] = self.value(item, under)
            return out
        return value


def _within(paths: list[Path], key: str, *, array: bool) -> list[Path]:
    """What is left of each path under `key` (an array's place when `array`): a path whose next
    key names it moves on; under an array a path that names no place stays as it is."""
    left = []
    for path in paths:
        if not path:
            continue
        head = path[0]
        if head == "*" or head == key:
            left.append(path[1:])
        elif array and whole_number(head) is None:
            left.append(path)
    return left


def redact(value: Any, rules: Rules) -> tuple[Any, bool]:
    """A redacted copy of `value` and whether anything was dropped or masked."""
    if rules.empty:
        return value, False
    walk = _Walk(rules)
    redacted = walk.value(value, list(rules.drop))
    return redacted, walk.changed
