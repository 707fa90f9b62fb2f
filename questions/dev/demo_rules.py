"""The demo's own rules as a backend (`custom`, seed 001's first tier): keyword rules for the
`support-routing` set, as an application might route tickets today, before any model.

`make run` sets `DECISIONS__CUSTOM_BACKEND=questions.dev.demo_rules:answer`, so the compare grid
shows these rules beside the stand-in and the `llm` wire: pass rate, latency, cost.

Rules know nothing of probability: each answer puts all its mass on what the first matching
rule says (`calibrated` stays false). A question the rules were not written for gets its
escape option (`other`, `none`, `unclear`, else the first), level 0, or false — an answer the
gateway's rules accept, never a guess dressed as one.
"""

from __future__ import annotations

import re
from typing import Any

MODEL = "demo keyword rules (not a model)"

#: department → the words that send a message there, tried in this order
DEPARTMENTS: dict[str, re.Pattern[str]] = {
    "billing": re.compile(r"\b(payout|invoice|refund|charge[sd]?|payment|billing|card)", re.I),
    "technical": re.compile(r"\b(crash|error|bug|broken|down|log ?in|not work|outage)", re.I),
    "sales": re.compile(r"\b(price|pricing|plan|upgrade|seats?|discount|licen[cs]e|buy)", re.I),
}
URGENT = re.compile(r"\b(urgent|asap|immediately|right now|today|within the hour)\b|!", re.I)
#: frustration level → its words, the highest level first
FRUSTRATION: list[tuple[int, re.Pattern[str]]] = [
    (2, re.compile(r"\b(angry|furious|unacceptable|third time|ridiculous)\b", re.I)),
    (1, re.compile(r"\b(still|again|failing|twice|nobody|help)\b", re.I)),
]
ESCAPES = ("other", "none", "unclear")


def _text(state: Any) -> str:
    """Every string in the state, joined: what the rules read."""
    found: list[str] = []
    pending = [state]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return " ".join(found)


def _choice(options: list[str], chosen: str) -> dict[str, Any]:
    return {
        "type": "choice",
        "choice": chosen,
        "probabilities": {o: 1.0 if o == chosen else 0.0 for o in options},
        "confidence": 1.0,
    }


def _score(levels: list[Any], level: int) -> dict[str, Any]:
    return {
        "type": "score",
        "score": float(level),
        "probabilities": {str(i): 1.0 if i == level else 0.0 for i in range(len(levels))},
        "legend": {str(i): e if e is not None else f"level {i}" for i, e in enumerate(levels)},
        "confidence": 1.0,
    }


def _escape(options: list[str]) -> str:
    return next((o for o in options if o.casefold() in ESCAPES), options[0])


def answer(state: Any, questions: dict[str, Any], model: str) -> dict[str, Any]:
    """The provider's body for `questions` about `state`, by keyword rules."""
    text = _text(state)
    out: dict[str, Any] = {}
    for qid, question in questions.items():
        kind, criteria = question["type"], question.get("criteria")
        if kind == "choice":
            options = list(criteria)
            chosen = next(
                (d for d, words in DEPARTMENTS.items() if d in options and words.search(text)),
                _escape(options),
            )
            out[qid] = _choice(options, chosen)
        elif kind == "score":
            level = next((lv for lv, words in FRUSTRATION if words.search(text)), 0)
            out[qid] = _score(criteria, min(level, len(criteria) - 1))
        else:
            out[qid] = {"type": "noul", "noul": 1.0 if URGENT.search(text) else 0.0}
    return {"model": MODEL, "answers": out}
