"""What of a provider's answer may leave the server: every text without the key (as written,
in any letter case, URL-encoded and base64-encoded: `scrub`, `without_secret`), the provider's
words without the state's own strings (`state_strings`). Pure Python."""

from __future__ import annotations

import base64
import dataclasses
import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from questions.engine.backends.base import Outcome

#: a state's strings at least this long are hidden where a provider may echo them
STATE_STRING_MIN = 8


def state_strings(state: Any) -> list[str]:
    """The strings a sample state holds (values and keys, longest first; the whole state when
    it is a string), of STATE_STRING_MIN characters or more: what is hidden from a provider's
    words, which reach a page or a log line. Shorter ones are words any message may hold."""
    found: set[str] = set()
    pending = [state]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            if len(value) >= STATE_STRING_MIN:
                found.add(value)
        elif isinstance(value, Mapping):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list | tuple):
            pending.extend(value)
    return sorted(found, key=len, reverse=True)


#: secrets longer than this (a state) are removed only as written, not in every encoding
SCRUB_VARIANTS_UP_TO = 512


def scrub(text: str, *secrets: str) -> str:
    """Remove every secret (and any long string state) from text that may leave the server.

    A secret is also found in any letter case, URL-encoded (any of its characters as `%XX`,
    spaces as `+`), and base64-encoded (standard or URL-safe alphabet, with or without padding).
    """
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
            if len(secret) <= SCRUB_VARIANTS_UP_TO and _may_hold(text, secret):
                text = _secret_pattern(secret).sub("[redacted]", text)
    return text


def _may_hold(text: str, secret: str) -> bool:
    """Whether `text` may hold `secret` in one of the forms `_secret_pattern` finds; False only
    when it surely does not: ASCII text with no `%` (so no URL-encoded character) and an ASCII
    secret with no space (so no `+`), in which no form of the secret is found letter case
    aside — the pattern's case-insensitive match, between ASCII characters. An answer is such
    text: this spares it the pattern, which tries every form at every character (~60 µs for
    an answer of 1.3 KB)."""
    if not (text.isascii() and secret.isascii()) or " " in secret or "%" in text:
        return True
    lowered = text.lower()
    return any(form in lowered for form in _lowered_forms(secret))


@functools.lru_cache(maxsize=64)
def _lowered_forms(secret: str) -> tuple[str, ...]:
    return tuple(form.lower() for form in [secret, *_base64_forms(secret)])


@functools.lru_cache(maxsize=64)
def _secret_pattern(secret: str) -> re.Pattern[str]:
    def encodings(char: str) -> list[str]:
        escaped = "".join(f"%{byte:02x}" for byte in char.encode())
        return [re.escape(char), re.escape(escaped), *([r"\+"] if char == " " else [])]

    as_written = "".join(f"(?:{'|'.join(encodings(char))})" for char in secret)
    alternatives = [as_written, *map(re.escape, _base64_forms(secret))]
    return re.compile("|".join(alternatives), re.IGNORECASE)


def _base64_forms(secret: str) -> list[str]:
    """The secret base64-encoded, standard and URL-safe, with and without padding, alone or
    inside a longer encoding; the longest first."""
    raw = secret.encode()
    encoded = base64.b64encode(raw).decode()
    forms = {encoded, encoded.rstrip("=")}
    # inside a longer encoding (`Bearer <key>`, `user:<key>`) the key starts at any of three
    # offsets; the whole groups that hold its bytes only are the same whatever surrounds them
    for offset in range(3):
        whole = 4 * ((offset + len(raw)) // 3)
        core = base64.b64encode(bytes(offset) + raw).decode()[4 if offset else 0 : whole]
        forms |= {core} if len(core) >= 8 else set()
    forms |= {form.replace("+", "-").replace("/", "_") for form in forms}
    return sorted(forms, key=len, reverse=True)


def without_secret(outcome: Outcome, secret: str) -> Outcome:
    """A provider may echo the key in any field of an answer: the model that answered, the
    request id, the fields it adds. Each is shown and stored, so each loses the key here (the
    raw response text and the provider's words lose it on the wire)."""
    outcome.request_id = scrub(outcome.request_id, secret)
    checked = outcome.checked
    if checked is not None:
        outcome.checked = dataclasses.replace(
            checked,
            model=None if checked.model is None else scrub(checked.model, secret),
            extra=_scrub_json(checked.extra, secret),
        )
    return outcome


def _scrub_json(value: Any, secret: str) -> Any:
    """Every string in parsed JSON, keys included, without the secret; iterative, as a provider's
    JSON may nest as deep as the parser allows."""
    root = [value]
    pending: list[tuple[Any, Any]] = [(root, 0)]
    while pending:
        container, slot = pending.pop()
        item = container[slot]
        if isinstance(item, str):
            container[slot] = scrub(item, secret)
        elif isinstance(item, dict):
            container[slot] = {scrub(k, secret): v for k, v in item.items()}
            pending.extend((container[slot], k) for k in container[slot])
        elif isinstance(item, list):
            container[slot] = list(item)
            pending.extend((container[slot], i) for i in range(len(item)))
    return root[0]
