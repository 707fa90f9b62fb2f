"""How the local stand-in reads words (`questions.dev.standin`): a text's content words,
lower-cased, English function words left out, lightly stemmed; a state's words are every string
and number in it. Its drafts (`questions.dev.standin_drafts`) read them the same way."""

from __future__ import annotations

import re
from typing import Any

_FUNCTION_WORDS = """a about above after again all also am an and any are as at be been before being
    below
    between both but by can could did do does doing down during each few for from further had
    has have having he her here hers him his how i if in into is it its itself just me more
    most my no nor not now of off on once only or other our ours out over own same she should
    so some such than that the their theirs them then there these they this those through to
    too under until up very was we were what when where which while who whom why will with
    would you your yours s t d ll m re ve"""
#: words that say nothing about which option fits (English function words)
STOPWORDS: frozenset[str] = frozenset(_FUNCTION_WORDS.split())
_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_SUFFIXES = ("ing", "ed", "es", "s", "ly")
_STEM_LENGTH = 6


def _stem(word: str) -> str:
    """Light stemming: a common suffix off, a final `e` off, at most six letters, so that
    `invoice`/`invoices`, `upgrade`/`upgrading` and `fail`/`failing`/`failed` meet."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word[:_STEM_LENGTH]


def word_forms(text: str) -> list[tuple[str, str]]:
    """Each content word of a text in order, as (its stem, as written in lower case)."""
    found = []
    for raw in _WORD.findall(_CAMEL.sub(" ", text)):
        word = raw.casefold()
        if word not in STOPWORDS:
            found.append((_stem(word), word))
    return found


def words(text: str) -> frozenset[str]:
    """The stemmed content words of a text (an id's too: `refund_request`, `refundRequest`)."""
    return frozenset(stem for stem, _ in word_forms(text))


def state_words(state: Any) -> frozenset[str]:
    """The words of a state: every string and number in it (its keys are its shape, not what
    it says)."""
    return words(state_text(state))


def state_text(state: Any) -> str:
    """Every string and number of a state, joined: what the stand-in reads of it."""
    texts: list[str] = []
    pending = [state]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int | float):
            texts.append(str(value))
        elif isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return " ".join(texts)
