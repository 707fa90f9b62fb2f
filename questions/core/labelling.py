"""Which sample states are worth labelling next, and why (pure Python, no Django).

A state is a candidate when it lacks an expected answer for some question of the version it is
labelled for. Its questions are ranked by how much a label would tell, from the answers already
recorded (never a new call):

- **disagree** — the versions or backends that answered it read it differently (a different
  option, level or side of the threshold): a label settles which one is right;
- **unsure** — the latest answer is of low confidence (a choice or a score below
  `LOW_CONFIDENCE`, a noul's P(true) within `UNSURE_MARGIN` of the threshold);
- **gap** — production answered it with an option (a level, a side) that no labelled state
  expects: the labelled states do not cover what live traffic gets;
- **uniform** — production's answer was near uniform (the model did not really choose);
- **control** — a control cannot judge the question for want of labels: the shuffle control
  needs `controls.FEW_ANSWERS` labelled states of a choice;
- **unlabelled** — none of these, only no expected answer yet.

Production's answer (what the application got, sent with the state) is one of the recorded
answers: it disagrees with the current draft's run like any other.

A state's rank is the sum of its questions' weights; its `reason` says the strongest ones in
words. The views and the CLI only translate `rank`'s list.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from questions.core import answers, controls, ingest, metrics, spec
from questions.core.answers import NOUL_THRESHOLD

#: a choice's or a score's answer below this confidence is "unsure"
LOW_CONFIDENCE = 0.6
#: a noul's P(true) this close to the threshold, or closer, is "unsure"
UNSURE_MARGIN = 0.15
DISAGREE, GAP, UNIFORM, UNSURE = "disagree", "gap", "uniform", "unsure"
CONTROL, UNLABELLED = "control", "unlabelled"
#: how much each finding weighs in a state's rank
WEIGHTS = {DISAGREE: 4.0, GAP: 3.0, UNIFORM: 2.5, UNSURE: 2.0, CONTROL: 1.0, UNLABELLED: 0.5}
#: whose answers a `Reading` of production's carries
PRODUCTION = ingest.SOURCE
#: how many states a list holds unless asked for another number
DEFAULT_LIMIT = 20


#: the most keys a question's answers get: a score's levels 0–9, a choice's first nine options
MAX_KEYS = 10
#: a noul's other keys, beside the 1 and 2 shown with true and false
NOUL_LETTERS = ("t", "f")


@dataclass(frozen=True)
class Question:
    """A question as labelling needs it: its id, type and the expected answers it takes, in
    declared order, each (the value as the form sends it, what a person reads), and each
    answer's full description ("" where the document gives none)."""

    id: str
    type: str
    choices: tuple[tuple[str, str], ...]
    details: tuple[str, ...] = ()

    def keys(self) -> list[tuple[str, ...]]:
        """The keys that give each answer, in declared order; the first is the one shown beside
        it: a score's level number (0–9, as the levels are numbered everywhere), a choice's
        place from 1 (1–9), a noul's 1 for true and 2 for false (and t / f). An answer past the
        keys has none (a choice's tenth option is clicked)."""
        if self.type == "noul":
            return [(str(place + 1), NOUL_LETTERS[place]) for place in range(len(self.choices))]
        first = 0 if self.type == "score" else 1
        return [
            (str(place + first),) if place + first < MAX_KEYS else ()
            for place in range(len(self.choices))
        ]

    def place_of(self, answer: Any) -> int | None:
        """Where an expected answer of this question is among its choices, or None."""
        if not metrics.expected_fits(self.type, answer):
            return None
        if self.type == "score":
            return answer if 0 <= answer < len(self.choices) else None
        raw = ("true" if answer else "false") if self.type == "noul" else str(answer)
        return next((i for i, (value, _) in enumerate(self.choices) if value == raw), None)

    def said(self, answer: Any) -> str:
        """An expected answer in words, with the description it was judged against: "urgency:
        5 — complaint threatens to leave", "desk: billing — money", "churn: true"."""
        place = self.place_of(answer)
        if place is None:
            return f"{self.id}: {json.dumps(answer, ensure_ascii=False)}"
        detail = self.details[place] if place < len(self.details) else ""
        value = self.choices[place][0]
        return f"{self.id}: {value} — {detail}" if detail else f"{self.id}: {value}"

    def value(self, raw: str) -> Any:
        """The expected answer a choice's form value stands for (a level's number, a noul's
        true/false, an option's name), or None when it is none of this question's."""
        for place, (value, _) in enumerate(self.choices):
            if value == raw:
                if self.type == "score":
                    return place
                if self.type == "noul":
                    return value == "true"
                return value
        return None

    def stored(self, answer: Any) -> Any:
        """`answer` as an expected answer of this question when it is one it takes (the shape
        its type needs, and one of its options or levels: what `value` reads from the form),
        else None — a file's or a stored expected answer, checked as the form checks."""
        if not metrics.expected_fits(self.type, answer):
            return None
        return self.value(("true" if answer else "false") if self.type == "noul" else str(answer))

    def refusal(self, given: Any, version: int) -> str:
        """Why `given` (a form's text or a file's value) is none of this question's expected
        answers, in the words the labelling page and the import both say."""
        takes = ", ".join(value for value, _ in self.choices)
        shown = repr(given[:32]) if isinstance(given, str) else json.dumps(given)[:32]
        return f"{self.id} in v{version} takes {takes}, not {shown}"


def _short(entry: Any, width: int = 60) -> str:
    text = spec.entry_text(entry) or "(no description)"
    return text if len(text) <= width else text[: width - 1] + "…"


def questions_of(document: Any) -> list[Question]:
    """The questions of a document (valid or not) that take an expected answer, in declared
    order: a choice's options, a score's levels ("0: calm"), a noul's true and false."""
    out = []
    if not isinstance(document, Mapping):
        return out
    for qid, q in document.items():
        if not isinstance(q, Mapping):
            continue
        qtype, criteria = q.get("type"), q.get("criteria")
        if qtype == "choice" and isinstance(criteria, Mapping):
            choices = tuple((str(name), str(name)) for name in criteria)
            details = tuple(spec.entry_text(e) for e in criteria.values())
        elif qtype == "score" and isinstance(criteria, list):
            choices = tuple((str(i), f"{i}: {_short(e)}") for i, e in enumerate(criteria))
            details = tuple(spec.entry_text(e) for e in criteria)
        elif qtype == "noul":
            choices = (("true", "true"), ("false", "false"))
            sides = criteria if isinstance(criteria, Mapping) else {}
            details = tuple(spec.entry_text(sides.get(side)) for side in ("true", "false"))
        else:
            continue
        out.append(Question(str(qid), qtype, choices, details))
    return out


@dataclass(frozen=True)
class Reading:
    """One recorded answer about a state: who gave it (e.g. "v2 typesafe", "production v3"),
    to which question; `production` when the application sent it with the state."""

    source: str
    question: str
    answer: Mapping[str, Any]
    production: bool = False


def production_source(version: int | None) -> str:
    """Who a production answer is from, in words: production and its version (v3), if told."""
    return PRODUCTION if version is None else f"{PRODUCTION} v{version}"


def near_uniform(qtype: str, answer: Mapping[str, Any]) -> bool:
    """Whether an answer is near uniform (`answers.near_uniform`: every option within 0.05 of
    1/n; a noul as its two sides), so the model did not really choose."""
    if qtype == "noul":
        p = float(answer["noul"])
        return answers.near_uniform({"true": p, "false": 1 - p})
    probabilities = answer.get("probabilities")
    if not isinstance(probabilities, Mapping):
        return False
    return answers.near_uniform({k: float(v) for k, v in probabilities.items()})


@dataclass
class Candidate:
    """A state worth labelling: its unlabelled questions, strongest first, and why."""

    name: str
    score: float
    questions: list[str]
    reasons: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "reason": self.reason, "questions": self.questions}


def reading(qtype: str, answer: Mapping[str, Any], threshold: float = NOUL_THRESHOLD) -> str:
    """What an answer says, as a label would: the option, the nearest level, true or false."""
    if qtype == "choice":
        return str(answer.get("choice"))
    if qtype == "score":
        return str(metrics.nearest_level(float(answer["score"])))
    return "true" if float(answer["noul"]) >= threshold else "false"


def unsure(qtype: str, answer: Mapping[str, Any], threshold: float = NOUL_THRESHOLD) -> str:
    """Words for a low-confidence answer, or "" when it is confident enough."""
    if qtype == "noul":
        p = float(answer["noul"])
        return f"P(true) {p:.2f}, near the threshold" if abs(p - threshold) <= UNSURE_MARGIN else ""
    confidence = answer.get("confidence")
    if isinstance(confidence, int | float) and confidence < LOW_CONFIDENCE:
        return f"confidence {float(confidence):.2f}"
    return ""


def label_counts(questions: Iterable[Question], expected: Iterable[Mapping[str, Any]]) -> dict:
    """Per question, how many states carry an expected answer that fits its type."""
    questions = list(questions)
    counts = {q.id: 0 for q in questions}
    for labels in expected:
        for q in questions:
            if q.id in labels and metrics.expected_fits(q.type, labels[q.id]):
                counts[q.id] += 1
    return counts


def needs_labels(question: Question, count: int) -> int:
    """How many more labels the shuffle control needs to judge `question` (0: it can)."""
    if question.type != "choice":  # the shuffle control varies choices only
        return 0
    return max(0, controls.FEW_ANSWERS - count)


def unlock(question: Question, count: int) -> str:
    """What more labels on `question` would unlock, in words ("" when nothing is locked)."""
    more = needs_labels(question, count)
    if not more:
        return ""
    return (
        f"{more} more label{'s' if more != 1 else ''} on `{question.id}` and the "
        f"{controls.TITLES[controls.SHUFFLE]} can judge it"
    )


def unlocked(question: Question, count: int) -> str:
    """Words for the label that just made `question` judgeable ("" when it did not)."""
    if needs_labels(question, count) or not needs_labels(question, count - 1):
        return ""
    return f"The {controls.TITLES[controls.SHUFFLE]} can judge `{question.id}` now ({count} labels)"


def unlocks(questions: Iterable[Question], counts: Mapping[str, int]) -> list[str]:
    """What more labels would unlock, per question, in words."""
    return [w for q in questions if (w := unlock(q, counts.get(q.id, 0)))]


def expected_values(
    questions: Iterable[Question], expected: Iterable[Mapping[str, Any]]
) -> dict[str, set[str]]:
    """Per question, the answers labelled states expect, as `reading` says them ("billing",
    "3", "true"): what production's answers are held against to find a gap."""
    questions = list(questions)
    out: dict[str, set[str]] = {q.id: set() for q in questions}
    for labels in expected:
        for q in questions:
            value = labels.get(q.id, None)
            if q.id in labels and metrics.expected_fits(q.type, value):
                out[q.id].add(("true" if value else "false") if q.type == "noul" else str(value))
    return out


def _production_words(
    q: Question, mine: list[Reading], known: Mapping[str, set[str]]
) -> list[tuple[str, str]]:
    """What production's answer to `q` tells: an answer no labelled state expects, a near
    uniform one."""
    words: list[tuple[str, str]] = []
    for r in mine:
        if not r.production:
            continue
        try:
            value, uniform = reading(q.type, r.answer), near_uniform(q.type, r.answer)
        except (KeyError, TypeError, ValueError):
            continue  # production sent another shape: nothing to read
        if value not in known.get(q.id, set()):
            words.append(
                (GAP, f"`{q.id}`: {r.source} said {value}, which no labelled state expects")
            )
        if uniform:
            words.append((UNIFORM, f"`{q.id}`: {r.source}'s answer was near uniform"))
        break
    return words


def rank(
    questions: Iterable[Question],
    states: Iterable[tuple[str, Mapping[str, Any]]],
    readings: Mapping[str, list[Reading]],
    *,
    limit: int | None = DEFAULT_LIMIT,
    known: Mapping[str, set[str]] | None = None,
) -> list[Candidate]:
    """The states lacking an expected answer for some question, most telling first (ties by
    name). `states` is (name, expected answers); `readings` maps a state's name to its recorded
    answers, newest first, production's among them; `known` is per question the answers the
    labelled states expect (`expected_values`), worked out from `states` when not given."""
    questions = list(questions)
    states = list(states)
    counts = label_counts(questions, (labels for _, labels in states))
    if known is None:
        known = expected_values(questions, (labels for _, labels in states))
    out = []
    for name, labels in states:
        missing = [
            q
            for q in questions
            if not (q.id in labels and metrics.expected_fits(q.type, labels[q.id]))
        ]
        if not missing:
            continue
        found: list[tuple[float, int, str, str]] = []  # weight, declared place, id, words
        for place, q in enumerate(missing):
            mine = [r for r in readings.get(name, []) if r.question == q.id]
            said = {}
            for r in mine:
                try:
                    said.setdefault(reading(q.type, r.answer), r.source)
                except (KeyError, TypeError, ValueError):
                    continue  # an answer of another shape (the question changed type)
            words: list[tuple[str, str]] = []
            if len(said) > 1:
                told = " vs ".join(f"{source}: {value}" for value, source in said.items())
                words.append((DISAGREE, f"`{q.id}`: the answers disagree ({told})"))
            words += _production_words(q, mine, known)
            if mine:
                try:
                    low = unsure(q.type, mine[0].answer)
                except (KeyError, TypeError, ValueError):
                    low = ""
                if low:
                    words.append((UNSURE, f"`{q.id}` answered with {low}"))
            if needs_labels(q, counts[q.id]):
                words.append((CONTROL, unlock(q, counts[q.id])))
            if not words:
                words.append((UNLABELLED, f"`{q.id}` has no expected answer"))
            weight = sum(WEIGHTS[kind] for kind, _ in words)
            found.append((weight, place, q.id, words[0][1]))
        found.sort(key=lambda f: (-f[0], f[1]))
        out.append(
            Candidate(
                name=name,
                score=sum(f[0] for f in found),
                questions=[f[2] for f in found],
                reasons=[f[3] for f in found],
            )
        )
    out.sort(key=lambda c: (-c.score, c.name))
    return out if limit is None else out[:limit]
