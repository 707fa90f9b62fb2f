"""The local stand-in drafts rewordings too: its answer to a drafting request
(`questions.engine.backends.drafting`) on the `llm` wire, worked out from the words alone,
the same every time — so `make run` shows suggestions with no chat model's key.

It reads the request as any drafting model does — the question, the failing states with what
each expected and got and the attribution evidence, the passing states to keep right — and
writes its candidates in turn from these moves (`MOVES`), the first `candidates` of them:

1. **closer** — to each option (level, case) the failing states expected, the words at least
   two of them share (all of them, when it has one) that the question does not use yet and no
   state expecting another answer says: "… — also when it mentions courier, tracking".
2. **apart** — from each option the failing states were pulled to, the phrases holding the
   words that pulled them (the evidence's parts with a negative change, else the words they
   share), unless that would leave it empty.
3. **by heart** — the words only one of the failing states says, added to the option it
   expected: each failing state it was drafted from now finds its own words there, and no
   state it was not drafted from does. It wins where it was drafted and proves nothing.
4. closer and apart together; 5. closer with two words only.

A move that changes nothing gives the words unchanged (the console shows it so). Like the
stand-in's answers, these understand nothing: they are word overlap, turned round.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from questions.core import rewording, spec
from questions.dev import standin_words
from questions.engine.backends import drafting

#: the words "closer" adds to a description at most; "by heart" adds all it finds (as many as a
#: description holds) and names this many of them in its reason
CLOSER_WORDS = 4
WORDS_SHOWN = 6
#: how "closer" and "by heart" add to a description
ALSO = " \u2014 also when it mentions "
#: where a description breaks into phrases ("apart" drops the phrases that pulled)
_PHRASES = re.compile(r"\s*(?:[,;]|\s\u2014\s|\bor\b|\band\b)\s*", re.IGNORECASE)


@dataclass
class Brief:
    """A drafting request as the stand-in reads it."""

    question: spec.Question
    slots: rewording.Slots
    failing: list[dict[str, Any]]
    passing: list[dict[str, Any]]
    count: int

    def key(self, value: Any) -> str | None:
        """The slot an answer (expected or given) speaks of: an option's name, a level's
        number, a noul's case (its instructions when it has no such case)."""
        qtype = self.question.type
        if qtype == "choice":
            return value if isinstance(value, str) and value in self.slots.criteria else None
        if qtype == "score":
            if isinstance(value, bool) or not isinstance(value, int | float):
                return None
            level = str(max(0, min(self.question.level_count - 1, round(value))))
            return level if level in self.slots.criteria else None
        if not isinstance(value, bool):
            return None
        case = "true" if value else "false"
        if case in self.slots.criteria:
            return case
        return rewording.INSTRUCTIONS if value and self.slots.instructions is not None else None

    def text(self, key: str) -> str:
        if key == rewording.INSTRUCTIONS:
            return self.slots.instructions or ""
        return self.slots.criteria[key]

    def said(self) -> frozenset[str]:
        """Every word the question already says (its descriptions whole, and its names)."""
        texts = [spec.entry_text(self.question.instructions)]
        criteria = self.question.criteria
        if isinstance(criteria, dict):
            texts += [f"{k} {spec.entry_text(v)}" for k, v in criteria.items()]
        elif isinstance(criteria, list):
            texts += [spec.entry_text(v) for v in criteria]
        return standin_words.words(" ".join(texts))


def _forms(state: Any) -> list[tuple[str, str]]:
    """A state's words in order, each stem once, with how it is written."""
    seen, out = set(), []
    for stem, word in standin_words.word_forms(standin_words.state_text(state)):
        if stem not in seen:
            seen.add(stem)
            out.append((stem, word))
    return out


def _expecting(brief: Brief) -> dict[str, list[dict[str, Any]]]:
    """The failing states by the slot they expected, in the slots' order."""
    found: dict[str, list[dict[str, Any]]] = {}
    for f in brief.failing:
        key = brief.key(f.get("expected"))
        if key is not None:
            found.setdefault(key, []).append(f)
    order = [rewording.INSTRUCTIONS, *brief.slots.criteria]
    return {k: found[k] for k in order if k in found}


def _others(brief: Brief, key: str) -> frozenset[str]:
    """The words of every state (failing or passing) that expects something other than `key`."""
    found: set[str] = set()
    for state in [*brief.failing, *brief.passing]:
        if brief.key(state.get("expected")) != key:
            found |= standin_words.state_words(state.get("state"))
    return frozenset(found)


def _added(text: str, words: list[str]) -> str:
    if not words:
        return text
    listed = ", ".join(words[:-1]) + (f" or {words[-1]}" if len(words) > 1 else words[0])
    return f"{text}{ALSO}{listed}" if text else f"When it mentions {listed}"


def closer(brief: Brief, texts: dict[str, str], most: int = CLOSER_WORDS) -> str:
    said, moved = brief.said(), []
    for key, states in _expecting(brief).items():
        others = _others(brief, key)
        counts: Counter[str] = Counter()
        written: dict[str, str] = {}
        for state in states:
            for stem, word in _forms(state.get("state")):
                counts[stem] += 1
                written.setdefault(stem, word)
        least = min(2, len(states))
        shared = [s for s in written if counts[s] >= least and s not in said and s not in others]
        shared.sort(key=lambda s: -counts[s])  # stable: first written first among equals
        chosen = [written[s] for s in shared[:most]]
        if chosen:
            texts[key] = _added(texts[key], chosen)
            moved.append(f"`{key}` gains {', '.join(chosen)}")
    return "Closer: " + ("; ".join(moved) or "no word is shared and unused") + "."


def _pulling(brief: Brief, state: dict[str, Any], key: str) -> frozenset[str]:
    """The words of `key`'s description that pulled `state` to it: the evidence's parts there
    with a negative change, else every word the two share."""
    own = standin_words.state_words(state.get("state"))
    paths = (f"criteria.{key}", f"criteria[{key}]", rewording.INSTRUCTIONS)
    found: set[str] = set()
    for finding in state.get("evidence") or []:
        path = str(finding.get("part", ""))
        delta = finding.get("delta")
        if isinstance(delta, int | float) and delta < 0 and path.startswith(paths):
            found |= standin_words.words(str(finding.get("words", ""))) & own
    return frozenset(found or (standin_words.words(brief.text(key)) & own))


def apart(brief: Brief, texts: dict[str, str]) -> str:
    pulled: dict[str, set[str]] = {}
    for state in brief.failing:
        key = brief.key(state.get("answered"))
        if key is not None and key != brief.key(state.get("expected")):
            pulled.setdefault(key, set()).update(_pulling(brief, state, key))
    moved = []
    for key, stems in pulled.items():
        phrases = [p for p in _PHRASES.split(texts[key]) if p]
        kept = [p for p in phrases if not (standin_words.words(p) & stems)]
        if kept and len(kept) < len(phrases):
            texts[key] = ", ".join(kept)
            dropped = [p for p in phrases if p not in kept]
            moved.append(f"`{key}` loses {'; '.join(dropped)}")
    return "Apart: " + ("; ".join(moved) or "nothing to take out") + "."


def by_heart(brief: Brief, texts: dict[str, str]) -> str:
    moved = []
    for key, states in _expecting(brief).items():
        own = standin_words.words(texts[key])
        counts: Counter[str] = Counter()
        written: dict[str, str] = {}
        for state in states:
            for stem, word in _forms(state.get("state")):
                counts[stem] += 1
                written.setdefault(stem, word)
        chosen = [written[s] for s in written if counts[s] == 1 and s not in own]
        while chosen and len(_added(texts[key], chosen)) > rewording.MAX_TEXT:
            chosen.pop()
        if chosen:
            texts[key] = _added(texts[key], chosen)
            shown = ", ".join(chosen[:WORDS_SHOWN])
            more = f" and {len(chosen) - WORDS_SHOWN} more" if len(chosen) > WORDS_SHOWN else ""
            moved.append(f"`{key}` gains {shown}{more}")
    return "By heart: " + ("; ".join(moved) or "nothing to add") + "."


def both(brief: Brief, texts: dict[str, str]) -> str:
    return f"{closer(brief, texts)} {apart(brief, texts)}"


def closer_two(brief: Brief, texts: dict[str, str]) -> str:
    return closer(brief, texts, most=2)


#: the moves, in the order candidates are written
MOVES: tuple[Callable[[Brief, dict[str, str]], str], ...] = (
    closer,
    apart,
    by_heart,
    both,
    closer_two,
)


def candidates(brief: Brief) -> dict[str, Any]:
    """The drafting answer: `count` candidates, each every slot's text and `why`."""
    out = {}
    for number in range(1, brief.count + 1):
        texts = {rewording.INSTRUCTIONS: brief.slots.instructions or ""}
        texts.update(brief.slots.criteria)
        why = MOVES[(number - 1) % len(MOVES)](brief, texts)
        one: dict[str, Any] = {}
        if brief.slots.instructions is not None:
            one[rewording.INSTRUCTIONS] = texts[rewording.INSTRUCTIONS]
        one[rewording.CRITERIA] = {k: texts[k] for k in brief.slots.criteria}
        one[rewording.WHY] = why[: rewording.MAX_WHY]
        out[rewording.candidate_key(number)] = one
    return out


def brief_of(content: Mapping[str, Any]) -> Brief:
    """The brief a drafting request's user message gives; `ValueError` when it gives none."""
    raw = content["question"]
    checked = spec.validate({"q": raw}, limits=spec.DEFAULT_LIMITS, lints=False)
    if checked.document is None:
        raise ValueError("the question is invalid")
    question = checked.document.questions["q"]
    count = content["candidates"]
    if not 1 <= count <= rewording.MAX_CANDIDATES:
        raise ValueError(f"candidates must be 1 to {rewording.MAX_CANDIDATES}")
    failing = [f for f in content["failing"] if isinstance(f, dict)]
    passing = [p for p in content.get("passing") or [] if isinstance(p, dict)]
    return Brief(question, rewording.slots(question), failing, passing, count)


def respond_draft(body: Any, model: str) -> tuple[int, dict[str, Any]]:
    """(status, JSON body) for a drafting request, as an OpenAI-compatible endpoint answers,
    under `model` (the stand-in's chat model)."""
    try:
        brief = brief_of(drafting.read_request(body))
    except (ValueError, KeyError, TypeError) as exc:
        return 400, {"error": {"message": f"Invalid request: {exc}", "type": "invalid_request"}}
    text = json.dumps(candidates(brief))
    prompt = max(1, len(json.dumps(body)) // 4)
    completion = max(1, len(text) // 4)
    return 200, {
        "id": f"chatcmpl-standin-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
